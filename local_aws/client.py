"""An HTTP client for the pipeline's two doors, as its real callers use them: Meta (signed webhook
deliveries, the verification handshake) and a producer (SigV4-signed jobs API calls).

Used by the demo, the end-to-end tests and the scenarios; it talks HTTP only.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import urllib.error
import urllib.request
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode, urlsplit

from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials

from stacks.config.environments import LOCAL_PRODUCER

TIMEOUT_SECONDS = 30


@dataclass(frozen=True)
class Response:
    status: int
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)

    @property
    def text(self) -> str:
        return self.body.decode("utf-8", errors="replace")


def sign(app_secret: str, body: bytes) -> str:
    return "sha256=" + hmac.new(app_secret.encode(), body, hashlib.sha256).hexdigest()


class PipelineClient:
    def __init__(
        self, api_url: str, *, app_secret: str = "", region: str = "us-east-1", role: str = LOCAL_PRODUCER
    ) -> None:
        """`role` is the role a jobs API caller acts as: the local API reads it from the SigV4
        access key id (local_aws/api.py) and the local environment grants it its tenants."""
        self.api_url = api_url.rstrip("/")
        self.app_secret = app_secret
        self._credentials = Credentials(role, "local", "local")
        self._region = region

    def request(self, method: str, path: str, body: bytes = b"", headers: dict[str, str] | None = None) -> Response:
        if not self.api_url.startswith(("http://", "https://")):
            raise ValueError(f"not an HTTP URL: {self.api_url}")
        url = self.api_url + path
        request = urllib.request.Request(url, data=body or None, method=method, headers=headers or {})  # noqa: S310
        try:
            with urllib.request.urlopen(request, timeout=TIMEOUT_SECONDS) as response:  # noqa: S310 (checked above)
                return Response(response.status, {k.lower(): v for k, v in response.headers.items()}, response.read())
        except urllib.error.HTTPError as error:
            return Response(error.code, {k.lower(): v for k, v in error.headers.items()}, error.read())

    # Meta's side
    def handshake(self, verify_token: str, challenge: str, mode: str = "subscribe") -> Response:
        query = urlencode({"hub.mode": mode, "hub.verify_token": verify_token, "hub.challenge": challenge})
        return self.request("GET", f"/webhooks/meta?{query}")

    def deliver(self, payload: Any, *, signature: str | None = None, raw: bytes | None = None) -> Response:
        """POST a delivery; signed with the app secret unless a signature (or none: "") is given."""
        body = raw if raw is not None else json.dumps(payload, ensure_ascii=False).encode("utf-8")
        headers = {"content-type": "application/json"}
        signature = sign(self.app_secret, body) if signature is None else signature
        if signature:
            headers["x-hub-signature-256"] = signature
        return self.request("POST", "/webhooks/meta", body, headers)

    # A producer's side
    def _signed(self, method: str, path: str, body: bytes, headers: dict[str, str]) -> Response:
        request = AWSRequest(method=method, url=self.api_url + path, data=body, headers=headers)
        request.headers["host"] = urlsplit(self.api_url).netloc
        SigV4Auth(self._credentials, "execute-api", self._region).add_auth(request)
        return self.request(method, path, body, dict(request.headers.items()))

    def submit_job(
        self,
        *,
        lane: str,
        kind: str,
        tenant: str,
        payload: Any,
        deadline: float | None = None,
        idempotency_key: str | None = None,
    ) -> Response:
        document: dict[str, Any] = {"lane": lane, "kind": kind, "tenant": tenant, "payload": payload}
        if deadline is not None:
            document["deadline"] = deadline
        headers = {"content-type": "application/json"}
        if idempotency_key:
            headers["idempotency-key"] = idempotency_key
        return self._signed("POST", "/jobs", json.dumps(document).encode(), headers)

    def job(self, job_id: str) -> Response:
        return self._signed("GET", f"/jobs/{job_id}", b"", {})
