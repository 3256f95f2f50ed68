"""The cost of one in-process call to the emulator, cut where it buys nothing.

Measured with cProfile over 500 conditional PutItems in one process (about 2.5 ms a call before):
- moto looks up the handler's method names with `inspect.getmembers` on every request (7 %);
  the class does not change, so the list is kept;
- moto's account lookup compares its registry of backends with `in` on a list, which compares
  whole dictionaries of backends by value (9 % of the runtime's CPU under load); an identity
  check says the same;
- botocore signs every request with SigV4 (12 %); the in-process emulator verifies no signature,
  so a request it will answer (moto's mock is on and the request is for AWS's own endpoint) goes
  unsigned. A request to an endpoint URL (moto's server, which routes by the signature's service
  name), presigned URLs and S3 (which reads an unsigned request as anonymous, and refuses it a
  private object) are still signed;
- moto matches each request's URL against every service's patterns (16 % of a PutItem); the
  handler for a URL is remembered (but S3's, whose handler depends on more than the URL: a bucket
  in the host or in the path).
"""

from __future__ import annotations

import functools
from typing import Any

_PATCHED = False


def install() -> None:
    global _PATCHED
    if _PATCHED:
        return
    _cache_method_names()
    _identity_backend_registry()
    _unsigned_in_process_requests()
    _routes_remembered()
    _PATCHED = True


def _cache_method_names() -> None:
    from moto.core import responses

    responses.method_names_from_class = functools.lru_cache(maxsize=None)(responses.method_names_from_class)


def _identity_backend_registry() -> None:
    from moto.core.base_backend import BackendDict

    original = BackendDict._create_account_specific_backend

    def create_account_specific_backend(self: Any, account_id: str) -> None:
        if self.__dict__.get("_registered") and dict.__contains__(self, account_id):
            return
        original(self, account_id)
        self.__dict__["_registered"] = True

    BackendDict._create_account_specific_backend = create_account_specific_backend  # type: ignore[method-assign]


def _unsigned_in_process_requests() -> None:
    from urllib.parse import urlsplit

    from botocore.signers import RequestSigner
    from moto.core.models import botocore_stubber

    original = RequestSigner.sign

    def sign(self: Any, operation_name: str, request: Any, *args: Any, **kwargs: Any) -> None:
        signing_type = kwargs.get("signing_type", args[1] if len(args) > 1 else "standard")
        host = urlsplit(getattr(request, "url", "") or "").hostname or ""
        signed_by_its_reader = self._signing_name == "s3"
        if (
            signing_type == "standard"
            and botocore_stubber.enabled
            and host.endswith(".amazonaws.com")
            and not signed_by_its_reader
        ):
            return
        original(self, operation_name, request, *args, **kwargs)

    RequestSigner.sign = sign  # type: ignore[method-assign]


def _routes_remembered() -> None:
    """moto finds the handler of each in-process request by trying every service's URL patterns,
    then every URL of the matching backend, as regular expressions; the answer for one URL never
    changes, so it is remembered (one entry per service endpoint the process calls)."""
    from moto.core import botocore_stubber
    from moto.core.exceptions import HTTPException
    from moto.moto_api import recorder

    stubber_class = botocore_stubber.BotocoreStubber
    original = stubber_class.process_request
    routes: dict[str, Any] = {}

    def process_request(self: Any, request: Any) -> Any:
        parsed_url, _ = botocore_stubber.get_equivalent_url_in_aws_domain(request.url)
        clean_url = f"{parsed_url.scheme}://{parsed_url.netloc}{parsed_url.path}"
        method = routes.get(clean_url)
        if method is None or botocore_stubber.passthrough_url(clean_url):
            method = _route(clean_url)
            if method is None:
                return original(self, request)
            routes[clean_url] = method
        normalized = botocore_stubber.normalize_request(request)
        try:
            recorder._record_request(normalized)
            return method(normalized, normalized.raw_url, normalized.headers)
        except HTTPException as error:
            return error.code, error.get_headers(), error.get_body()

    stubber_class.process_request = process_request  # type: ignore[method-assign]


def _route(clean_url: str) -> Any:
    """The handler moto's own lookup would pick for `clean_url`, or None (let moto decide)."""
    import re

    from moto import backends
    from moto.core import DEFAULT_ACCOUNT_ID, botocore_stubber
    from moto.core.base_backend import BackendDict

    for service, pattern in botocore_stubber.backend_index.backend_url_patterns:
        if not pattern.match(clean_url):
            continue
        if service == "s3" or botocore_stubber.passthrough_service(service):
            return None
        if not botocore_stubber.service_whitelisted(service):
            return None
        backend_dict = backends.get_backend(service)  # type: ignore[call-overload]
        if isinstance(backend_dict, BackendDict):
            regions = backend_dict[DEFAULT_ACCOUNT_ID]
            backend = regions["us-east-1"] if "us-east-1" in regions else regions["aws"]
        else:
            backend = backend_dict["global"]
        for url, method in backend.urls.items():
            if re.compile(url).match(clean_url):
                return method
        return None
    return None
