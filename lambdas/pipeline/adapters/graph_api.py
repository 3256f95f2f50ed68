"""Meta's send APIs over HTTPS: WhatsApp Cloud API `POST /{phone-number-id}/messages`, and the
Send API `POST /{page-id}/messages` for Messenger and Instagram.

The access token is read from Secrets Manager (`{"access_token": "..."}`) and kept for
`cache_seconds`, so a rotated token reaches every warm instance within that time; a token Meta
refuses (190) is read again at once on the next send, so a rotation made to fix it takes effect
without waiting. One connection per send, from the standard library (Lambda's runtime promises nothing else), and
no retries: a connection that never opened is `NotSent` (safe to try again), an answer that never
came once the request may have left, or a 5xx that does not say Meta took nothing, is
`OutcomeUnknown` (never repeated; domain/dependencies/meta_send.py).
The object id of a send's path is checked by its shape (digits, domain/reply_to.py) and quoted as
one segment (`graph_segment`) before the token is read: no id can reach another edge.
"""

from __future__ import annotations

import http.client
import json
from collections.abc import Callable
from typing import Any
from urllib.parse import SplitResult, quote, urlsplit

from botocore.exceptions import BotoCoreError, ClientError

from pipeline.domain.dependencies.meta_send import (
    WHATSAPP,
    NotSent,
    OutcomeUnknown,
    ReplyTo,
    Sent,
    TokenInvalid,
    error_for,
    send_api_text,
    whatsapp_text,
)
from pipeline.domain.errors import PermanentError, TransientError
from pipeline.domain.reply_to import meta_id

TOKEN_CACHE_SECONDS = 60.0
CONNECT_SECONDS = 2.0
SEND_TIMEOUT_SECONDS = 10.0
"""The longest a send waits for Meta's answer (less when the task has less time left)."""


def graph_base(base_url: str) -> SplitResult:
    """The Graph API's base URL, checked once where an adapter is built. Raises ValueError."""
    split = urlsplit(base_url.rstrip("/"))
    if split.scheme not in ("https", "http") or not split.hostname:
        raise ValueError(f"not a Graph API URL: {base_url!r}")
    return split


def connection_to(base: SplitResult, timeout: float) -> http.client.HTTPConnection:
    """A connection to the Graph API's host, not yet opened (http for the local runtime's fake)."""
    connection_class = http.client.HTTPSConnection if base.scheme == "https" else http.client.HTTPConnection
    return connection_class(base.hostname or "", base.port, timeout=timeout)


def graph_get(base: SplitResult, path: str, token: str, *, timeout: float) -> tuple[int, Any]:
    """One `GET {base path}{path}` with the token: Meta's status and its answer decoded (None when
    the body is not JSON). Raises OSError or http.client.HTTPException when no answer came."""
    connection = connection_to(base, timeout)
    try:
        connection.request("GET", f"{base.path}{path}", headers={"Authorization": f"Bearer {token}"})
        response = connection.getresponse()
        status, data = response.status, response.read()
    finally:
        connection.close()
    try:
        return status, json.loads(data or b"{}")
    except ValueError:
        return status, None


def graph_segment(object_id: str) -> str:
    """A Meta object id as one path segment: its shape checked (ReplyToRefused otherwise), then
    quoted anyway, so no id can add a segment, a query or a fragment to a Graph URL."""
    return quote(meta_id(object_id, "a Graph API object id"), safe="")


class TokenUnavailable(TransientError):
    reason = "meta_token_unavailable"


class AccessToken:
    def __init__(
        self, client: Any, secret_arn: str, clock: Callable[[], float], cache_seconds: float = TOKEN_CACHE_SECONDS
    ):
        self._client = client
        self._arn = secret_arn
        self._clock = clock
        self._cache_seconds = cache_seconds
        self._token: str | None = None
        self._fresh_until = 0.0

    def get(self) -> str:
        now = self._clock()
        if self._token is not None and now < self._fresh_until:
            return self._token
        try:
            raw = self._client.get_secret_value(SecretId=self._arn)["SecretString"]
            token = str(json.loads(raw).get("access_token") or "")
        except (ClientError, BotoCoreError, ValueError, AttributeError) as exc:
            raise TokenUnavailable(f"the Meta access token could not be read: {type(exc).__name__}") from exc
        if not token:
            raise TokenUnavailable("the Meta access token secret holds no access_token")
        self._token, self._fresh_until = token, now + self._cache_seconds
        return token

    def forget(self) -> None:
        self._token = None


class GraphSender:
    def __init__(self, base_url: str, token: AccessToken, *, timeout_seconds: float = SEND_TIMEOUT_SECONDS) -> None:
        self._split = graph_base(base_url)
        self._token = token
        self._timeout = timeout_seconds

    def send(self, reply_to: ReplyTo, text: str, callback: str, *, timeout: float) -> Sent:
        # Checked again here, before the token is read or a connection opened: a ReplyTo built
        # without `parse` must not put a path of its own choosing into the URL.
        path = f"{self._split.path}/{graph_segment(reply_to.business_id)}/messages"
        body = (
            whatsapp_text(reply_to, text, callback) if reply_to.channel == WHATSAPP else send_api_text(reply_to, text)
        )
        token = self._token.get()
        split = self._split
        connection = connection_to(split, CONNECT_SECONDS)
        try:
            try:
                connection.connect()
            except OSError as exc:
                raise NotSent(f"Meta could not be reached: {type(exc).__name__}") from exc
            # From here the request may have left: no answer is an unknown outcome, never a retry.
            assert connection.sock is not None
            connection.sock.settimeout(min(self._timeout, max(0.1, timeout)))
            try:
                connection.request(
                    "POST",
                    path,
                    body=json.dumps(body).encode(),
                    headers={"Content-Type": "application/json", "Authorization": f"Bearer {token}"},
                )
                response = connection.getresponse()
                status, data = response.status, response.read()
            except (OSError, http.client.HTTPException) as exc:
                raise OutcomeUnknown(f"no answer from Meta: {type(exc).__name__}") from exc
        finally:
            connection.close()
        try:
            answer = json.loads(data or b"{}")
        except ValueError:
            answer = {}
        if status >= 300:
            error = error_for(status, answer)
            if isinstance(error, TokenInvalid):
                self._token.forget()
            raise error
        message_id = _message_id(answer)
        if not message_id:
            raise OutcomeUnknown("Meta answered without a message id")
        return Sent(message_id)


def _message_id(answer: Any) -> str:
    if not isinstance(answer, dict):
        return ""
    messages = answer.get("messages")
    if isinstance(messages, list) and messages and isinstance(messages[0], dict):
        return str(messages[0].get("id") or "")
    return str(answer.get("message_id") or "")


class NoSender:
    """What a lane deployed without Meta's send settings has: its task must not send."""

    def send(self, reply_to: ReplyTo, text: str, callback: str, *, timeout: float) -> Sent:
        raise PermanentError("no_sender", "this lane is deployed without Meta's send settings")
