"""API Gateway HTTP API (payload format 2.0) requests and responses, as plain values.

The doors' rules (domain/webhook/door.py, domain/jobs/api.py, domain/erasure/callback.py) take an
`HttpRequest` and return a `Reply`; the handlers turn the event into the one and the other into
what API Gateway takes back. Every door reads events through here so that header-name case, base64
bodies, duplicate query parameters and body caps are handled once. Pure: no AWS, no environment.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs

JSON = "application/json"
TEXT = "text/plain; charset=utf-8"


class BodyTooLarge(ValueError):
    def __init__(self, size: int, limit: int) -> None:
        super().__init__(f"body is {size} bytes; the limit is {limit}")
        self.size = size
        self.limit = limit


class BodyUndecodable(ValueError):
    """The event's body cannot be turned back into the bytes the client sent."""


@dataclass(frozen=True)
class HttpRequest:
    method: str
    path: str
    headers: Mapping[str, str]
    """Names lower-cased (API Gateway already does; other callers may not)."""
    raw_query: str
    query: Mapping[str, str]
    body: str | None
    is_base64: bool
    path_parameters: Mapping[str, str] = field(default_factory=dict)
    request_id: str | None = None
    caller: str | None = None
    """The IAM caller's ARN, on IAM-authorised routes (API Gateway checked the signature)."""
    domain_name: str | None = None
    """The host the caller addressed (requestContext.domainName)."""
    client_subject: str | None = None
    """The subject of the client certificate API Gateway verified (mutual TLS on a custom domain:
    requestContext.authentication.clientCert.subjectDN); None on any other way in."""

    @classmethod
    def from_event(cls, event: Mapping[str, Any]) -> HttpRequest:
        context = event.get("requestContext") or {}
        http = context.get("http") or {}
        headers = {str(k).lower(): str(v) for k, v in (event.get("headers") or {}).items()}
        body = event.get("body")
        iam = (context.get("authorizer") or {}).get("iam") or {}
        caller = iam.get("userArn")
        certificate = (context.get("authentication") or {}).get("clientCert") or {}
        subject = certificate.get("subjectDN")
        return cls(
            method=str(http.get("method") or "").upper(),
            path=str(event.get("rawPath") or http.get("path") or ""),
            headers=headers,
            raw_query=str(event.get("rawQueryString") or ""),
            query={str(k): str(v) for k, v in (event.get("queryStringParameters") or {}).items()},
            body=None if body is None else str(body),
            is_base64=bool(event.get("isBase64Encoded")),
            path_parameters={str(k): str(v) for k, v in (event.get("pathParameters") or {}).items()},
            request_id=context.get("requestId"),
            caller=str(caller) if caller else None,
            domain_name=str(context["domainName"]) if context.get("domainName") else None,
            client_subject=str(subject) if subject else None,
        )

    def base_url(self) -> str | None:
        """Scheme and host as the caller addressed them (API Gateway says which scheme in
        X-Forwarded-Proto), for links a response hands back; None when the event names no host."""
        host = self.domain_name or self.headers.get("host")
        if not host:
            return None
        scheme = self.headers.get("x-forwarded-proto", "https").split(",")[0].strip() or "https"
        return f"{scheme}://{host}"

    def query_values(self) -> dict[str, list[str]]:
        """Every value of every query parameter. The raw string is preferred because API Gateway
        joins repeated parameters with commas in `queryStringParameters`, which would make
        `a=x&a=y` indistinguishable from `a=x,y`."""
        if self.raw_query:
            return parse_qs(self.raw_query, keep_blank_values=True)
        return {name: [value] for name, value in self.query.items()}

    def body_bytes(self, limit: int) -> bytes:
        """The bytes the client sent, refusing anything over `limit` before decoding it, so an
        oversize body costs neither a base64 decode nor an HMAC."""
        if self.body is None:
            return b""
        if self.is_base64:
            # Base64 carries 3 bytes in 4 characters, less up to 2 of padding: refuse on the
            # encoded length before allocating the decoded copy.
            at_least = len(self.body) * 3 // 4 - 2
            if at_least > limit:
                raise BodyTooLarge(at_least, limit)
            try:
                raw = base64.b64decode(self.body, validate=True)
            except (binascii.Error, ValueError) as exc:
                raise BodyUndecodable(f"body is marked base64 but is not: {exc}") from exc
        else:
            if len(self.body) > limit:  # every character is at least one byte
                raise BodyTooLarge(len(self.body), limit)
            try:
                # surrogateescape round-trips bytes a caller decoded the same way; any other
                # lone surrogate has no byte form, so the body cannot be what was signed.
                raw = self.body.encode("utf-8", errors="surrogateescape")
            except UnicodeEncodeError as exc:
                raise BodyUndecodable("body holds characters that have no UTF-8 form") from exc
        if len(raw) > limit:
            raise BodyTooLarge(len(raw), limit)
        return raw


class Failed(Exception):
    """The request cannot be answered because something it needs failed: the door answers 500
    and counts `reason`. Whoever raises it has already logged why."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass(frozen=True)
class Reply:
    """A door's answer as plain values; `to_event` is the shape API Gateway takes back."""

    status: int
    body: str = ""
    content_type: str = TEXT
    headers: Mapping[str, str] = field(default_factory=dict)

    def to_event(self) -> dict[str, Any]:
        return {
            "statusCode": self.status,
            "headers": {"content-type": self.content_type, "x-content-type-options": "nosniff", **self.headers},
            "body": self.body,
            "isBase64Encoded": False,
        }


def response(
    status: int, body: str = "", *, content_type: str = TEXT, headers: Mapping[str, str] | None = None
) -> Reply:
    return Reply(status, body, content_type, dict(headers or {}))


def json_response(status: int, payload: Any, *, headers: Mapping[str, str] | None = None) -> Reply:
    return response(status, json.dumps(payload, separators=(",", ":")), content_type=JSON, headers=headers)


def error(status: int, message: str, *, headers: Mapping[str, str] | None = None) -> Reply:
    return json_response(status, {"message": message}, headers=headers)
