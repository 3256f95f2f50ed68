"""API Gateway's part: the template's HTTP API routes served on 127.0.0.1.

Requests become payload-format-2.0 events, the integration's function runs, and its response is
returned unchanged. Each route has its own throttle (rate and burst): the stage's route settings
for its key, else the stage's default, answering 429 as API Gateway does.

IAM-authorised routes require a SigV4 Authorization header, and the event carries the caller's
identity as API Gateway's IAM authorizer gives it (`requestContext.authorizer.iam`). There is no IAM
here, so the signature is not verified (the one door left open) and the identity is read from the
header: its access key id names the role the caller acts as, a session of
`arn:aws:iam::<account>:role/<access key id>`. The local environment grants its tenants to those
roles like any other (`JobsSettings.callers`).
"""

from __future__ import annotations

import base64
import json
import re
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from local_aws.deploy import ACCOUNT, LOCAL_API_ID
from local_aws.functions import FunctionHost

_TEXT_TYPES = ("text/", "application/json", "application/x-www-form-urlencoded", "application/xml")


class TokenBucket:
    def __init__(self, rate: float, burst: int) -> None:
        self._rate = rate
        self._capacity = float(burst)
        self._tokens = float(burst)
        self._at = time.monotonic()
        self._lock = threading.Lock()

    def take(self) -> bool:
        with self._lock:
            now = time.monotonic()
            self._tokens = min(self._capacity, self._tokens + (now - self._at) * self._rate)
            self._at = now
            if self._tokens >= 1:
                self._tokens -= 1
                return True
            return False


def throttle(rate: float, burst: int) -> dict[str, float]:
    """A route's throttle as a stage's RouteSettings write it."""
    return {"ThrottlingRateLimit": rate, "ThrottlingBurstLimit": burst}


def route_throttles(stage: dict[str, Any]) -> Callable[[str], TokenBucket]:
    """A new bucket for a route key, from a template's stage: its RouteSettings entry for the key,
    else DefaultRouteSettings (API Gateway applies the default to each route on its own)."""
    default = stage.get("DefaultRouteSettings") or {}
    by_key = stage.get("RouteSettings") or {}

    def bucket(key: str) -> TokenBucket:
        settings = {**default, **(by_key.get(key) or {})}
        return TokenBucket(
            rate=float(settings.get("ThrottlingRateLimit", 10_000)),
            burst=int(settings.get("ThrottlingBurstLimit", 5_000)),
        )

    return bucket


@dataclass(frozen=True)
class Route:
    method: str
    path: str
    function: FunctionHost
    iam: bool
    throttle: TokenBucket

    @property
    def key(self) -> str:
        return f"{self.method} {self.path}"

    def match(self, method: str, path: str) -> dict[str, str] | None:
        if self.method not in (method, "ANY"):
            return None
        pattern = re.sub(r"\\\{([A-Za-z0-9_]+)\\\+\\\}", r"(?P<\1>.+)", re.escape(self.path))
        pattern = re.sub(r"\\\{([A-Za-z0-9_]+)\\\}", r"(?P<\1>[^/]+)", pattern)
        found = re.fullmatch(pattern, path)
        return found.groupdict() if found else None


_SIGV4_CREDENTIAL = re.compile(r"AWS4-HMAC-SHA256 Credential=([\w+=,.@-]{1,64})/")
LOCAL_SESSION = "local"


def iam_identity(authorization: str) -> dict[str, Any] | None:
    """What API Gateway's IAM authorizer would put in the event for this header, or None when the
    header is not a SigV4 one (API Gateway answers 403 before any function runs)."""
    found = _SIGV4_CREDENTIAL.match(authorization)
    if found is None:
        return None
    role = found.group(1)
    return {
        "accessKey": role,
        "accountId": ACCOUNT,
        "callerId": f"AROALOCAL{role.upper()}:{LOCAL_SESSION}",
        "cognitoIdentity": None,
        "principalOrgId": None,
        "userArn": f"arn:aws:sts::{ACCOUNT}:assumed-role/{role}/{LOCAL_SESSION}",
        "userId": f"AROALOCAL{role.upper()}:{LOCAL_SESSION}",
    }


def _is_text(content_type: str) -> bool:
    return any(content_type.lower().startswith(t) for t in _TEXT_TYPES)


def build_event(
    route: Route,
    method: str,
    target: str,
    headers: dict[str, str],
    body: bytes,
    source_ip: str,
    path_parameters: dict[str, str],
    identity: dict[str, Any] | None = None,
) -> dict[str, Any]:
    parts = urlsplit(target)
    query = parse_qsl(parts.query, keep_blank_values=True)
    now = datetime.now(UTC)
    event: dict[str, Any] = {
        "version": "2.0",
        "routeKey": route.key,
        "rawPath": parts.path,
        "rawQueryString": parts.query,
        # API Gateway tells the function how the caller reached it; this listener speaks plain HTTP.
        "headers": {**headers, "x-forwarded-proto": "http"},
        "requestContext": {
            "accountId": ACCOUNT,
            "apiId": LOCAL_API_ID,
            "domainName": headers.get("host", "127.0.0.1"),
            "domainPrefix": LOCAL_API_ID,
            "http": {
                "method": method,
                "path": parts.path,
                "protocol": "HTTP/1.1",
                "sourceIp": source_ip,
                "userAgent": headers.get("user-agent", ""),
            },
            "requestId": str(uuid.uuid4()),
            "routeKey": route.key,
            "stage": "$default",
            "time": now.strftime("%d/%b/%Y:%H:%M:%S +0000"),
            "timeEpoch": int(now.timestamp() * 1000),
        },
        "isBase64Encoded": False,
    }
    if query:
        # API Gateway joins repeated parameters with commas.
        merged: dict[str, str] = {}
        for name, value in query:
            merged[name] = f"{merged[name]},{value}" if name in merged else value
        event["queryStringParameters"] = merged
    if path_parameters:
        event["pathParameters"] = path_parameters
    if identity is not None:
        event["requestContext"]["authorizer"] = {"iam": identity}
    if "cookie" in headers:
        event["cookies"] = [c.strip() for c in headers["cookie"].split(";")]
    if body:
        text = None
        if _is_text(headers.get("content-type", "")):
            try:
                text = body.decode("utf-8")
            except UnicodeDecodeError:
                text = None
        if text is None:
            event["body"] = base64.b64encode(body).decode("ascii")
            event["isBase64Encoded"] = True
        else:
            event["body"] = text
    return event


def response_from(result: Any) -> tuple[int, dict[str, str], bytes]:
    """Payload format 2.0: a dict with statusCode is used as is; anything else is a 200 JSON body."""
    if isinstance(result, dict) and "statusCode" in result:
        body = result.get("body") or ""
        raw = base64.b64decode(body) if result.get("isBase64Encoded") else str(body).encode("utf-8")
        headers = {str(k): str(v) for k, v in (result.get("headers") or {}).items()}
        return int(result["statusCode"]), headers, raw
    if isinstance(result, str):
        return 200, {"content-type": "application/json"}, result.encode("utf-8")
    return 200, {"content-type": "application/json"}, json.dumps(result).encode("utf-8")


class _Server(ThreadingHTTPServer):
    # socketserver listens with a backlog of 5: a few hundred callers connecting at once (a
    # campaign, a soak) had their connections refused before the stage could answer 429, which API
    # Gateway never does. The kernel caps this at net.core.somaxconn.
    request_queue_size = 1024


class ApiServer:
    def __init__(
        self,
        routes: list[Route],
        *,
        port: int,
        on_request: Callable[[str, int, float], None],
        refusal: Callable[[Route, str], str | None] = lambda route, method: None,
        on_refused: Callable[[str], None] = lambda reason: None,
        on_answered: Callable[[Route, int], None] = lambda route, status: None,
    ) -> None:
        """`refusal(route, method)` says why API Gateway may not invoke the route's function (its
        permissions do not allow this API), or None; refused, the caller gets 500 and
        `on_refused` the reason, as the access log's integrationErrorMessage would say it.
        `on_answered(route, status)` hears every answer on a route, as API Gateway counts a route's
        metrics."""
        self.routes = routes
        self._on_answered = on_answered
        self._on_request = on_request
        self._refusal = refusal
        self._on_refused = on_refused
        self._server = _Server(("127.0.0.1", port), self._handler_class())
        self._server.daemon_threads = True
        # A short poll interval: a stop under load waits for this loop to notice.
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.1}, name="api", daemon=True
        )

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def handle(
        self, method: str, target: str, headers: dict[str, str], body: bytes, source_ip: str
    ) -> tuple[int, dict[str, str], bytes]:
        path = urlsplit(target).path
        for route in self.routes:
            parameters = route.match(method, path)
            if parameters is None:
                continue
            answer = self._on_route(route, parameters, method, target, headers, body, source_ip)
            self._on_answered(route, answer[0])
            return answer
        return _message(404, "Not Found")

    def _on_route(
        self,
        route: Route,
        parameters: dict[str, str],
        method: str,
        target: str,
        headers: dict[str, str],
        body: bytes,
        source_ip: str,
    ) -> tuple[int, dict[str, str], bytes]:
        if not route.throttle.take():
            return _message(429, "Too Many Requests")
        identity = iam_identity(headers.get("authorization", "")) if route.iam else None
        if route.iam and identity is None:
            return _message(403, "Forbidden")
        refused = self._refusal(route, method)
        if refused is not None:
            self._on_refused(refused)
            return _message(500, "Internal Server Error")
        event = build_event(route, method, target, headers, body, source_ip, parameters, identity)
        outcome = route.function.invoke(event)
        if not outcome.ok:
            if outcome.error and outcome.error.startswith("Task timed out"):
                return _message(503, "Service Unavailable")
            return _message(500, "Internal Server Error")
        return response_from(outcome.result)

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        api = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def _serve(self) -> None:
                try:
                    self._answer()
                except (BrokenPipeError, ConnectionResetError):
                    # The caller gave up (a client timeout); API Gateway logs it, nothing more.
                    self.close_connection = True

            def _answer(self) -> None:
                started = time.monotonic()
                length = int(self.headers.get("content-length") or 0)
                body = self.rfile.read(length) if length else b""
                headers: dict[str, str] = {}
                for raw_name, value in self.headers.items():
                    name = raw_name.lower()
                    headers[name] = f"{headers[name]},{value}" if name in headers else value
                client = self.client_address[0]
                status, out_headers, payload = api.handle(self.command, self.path, headers, body, client)
                self.send_response(status)
                for name, value in out_headers.items():
                    if name.lower() not in ("content-length", "connection"):
                        self.send_header(name, value)
                self.send_header("content-length", str(len(payload)))
                self.send_header("apigw-requestid", str(uuid.uuid4()))
                self.end_headers()
                self.wfile.write(payload)
                api._on_request(f"{self.command} {urlsplit(self.path).path}", status, time.monotonic() - started)

            do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = _serve

            def log_message(self, format: str, *args: Any) -> None:
                return  # access is recorded through on_request, not stderr

        return Handler


def _message(status: int, text: str) -> tuple[int, dict[str, str], bytes]:
    return status, {"content-type": "application/json"}, json.dumps({"message": text}).encode()
