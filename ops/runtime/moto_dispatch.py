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
  name) and presigned URLs are still signed.
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
        if signing_type == "standard" and botocore_stubber.enabled and host.endswith(".amazonaws.com"):
            return
        original(self, operation_name, request, *args, **kwargs)

    RequestSigner.sign = sign  # type: ignore[method-assign]
