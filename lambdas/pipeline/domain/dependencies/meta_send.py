"""Sending a reply through Meta: what is sent, what Meta's answers mean, and the reply's states.

Meta's send APIs have no idempotency key: a request whose answer never came (a timeout after it
left, a connection dropped mid-answer) may have been sent. So a reply is sent at most once by
recording each attempt before the call (the reply item's `send_state` moves to `calling` with a
conditional write, tasks/replies.py) and never calling again while an attempt's outcome is
unknown. WhatsApp carries our reference back in the statuses of the message it sent
(`biz_opaque_callback_data`), which resolves an unknown attempt as sent; an attempt nothing
resolves within the lane's window is left unanswered, counted and alarmed, never resent.

Meta's error codes (the `error.code` of its JSON error body):
- rate limits (130429 throughput, 131056 pair rate, 80007 account rate, 4 and 613 call rate): the
  request was refused, so nothing was sent; retried, more slowly than other failures;
- 131047 (outside the 24-hour customer service window) and 131026 (undeliverable): permanent, the
  reply is left unanswered with that reason;
- 190 (the access token is invalid or expired): no reply can be sent until it is replaced, a
  reason to stop the lane;
- anything else Meta answered with a 5xx: refused, not sent, retried; another 4xx: permanent.

No HTTP library here: adapters/graph_api.py makes the calls.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pipeline.domain.errors import MESSAGE_LIMIT, PermanentError, TransientError
from pipeline.domain.reply_to import (  # noqa: F401 (where a reply goes, still named through this module)
    CHANNELS,
    INSTAGRAM,
    MESSENGER,
    WHATSAPP,
    ReplyTo,
)

PENDING = "pending"
"""The turn stored the reply: the intent to send it."""
CALLING = "calling"
"""An attempt is being made (recorded before the call); its outcome is not known yet."""
RETRY = "retry"
"""Meta refused the last attempt (nothing was sent): the next one may be made."""
UNKNOWN = "unknown"
"""The last attempt's answer never came: it may have been sent. Resolved by Meta's status, or by
the end of the window, never by sending again."""
SENT = "sent"
UNANSWERED = "unanswered"
"""Final: the turn got no reply (a permanent refusal, or an unknown outcome left unresolved)."""

RATE_LIMITS = frozenset({130429, 131056, 80007, 4, 613})
PERMANENT = {131047: "outside_service_window", 131026: "undeliverable"}
TOKEN_INVALID = 190
CALLBACK_PREFIX = "lanes1:"


@dataclass(frozen=True)
class Sent:
    message_id: str
    """Meta's id of the message it accepted (`wamid.` on WhatsApp, `m_` on the Send API)."""


class SendRefused(TransientError):
    """Meta answered with an error: the reply was not sent, and may be sent again later."""

    reason = "meta_refused"

    def __init__(self, code: int, message: str, *, slow: bool = False) -> None:
        super().__init__(f"({code}) {message}"[:MESSAGE_LIMIT])
        self.code = code
        self.slow = slow
        if slow:
            self.reason = "meta_rate_limited"


class TokenInvalid(TransientError):
    """Meta refused the access token (190): no reply goes out until it is replaced."""

    reason = "meta_token_invalid"
    stops_lane = True

    def __init__(self, message: str) -> None:
        super().__init__(f"(190) {message}"[:MESSAGE_LIMIT])
        self.code = TOKEN_INVALID


class SendRejected(PermanentError):
    """Meta will never send this reply (outside the service window, undeliverable, malformed)."""

    def __init__(self, code: int, reason: str, message: str) -> None:
        super().__init__(reason, f"({code}) {message}"[:MESSAGE_LIMIT])
        self.code = code


class OutcomeUnknown(Exception):
    """The request left and its answer never came: it may have been sent. Not retried."""


class NotSent(TransientError):
    """The request never reached Meta (no connection): nothing was sent."""

    reason = "meta_unreachable"


def error_for(status: int, body: Any) -> Exception:
    """The error for a Graph API error answer (`{"error": {"code": ..., "message": ...}}`)."""
    error = body.get("error") if isinstance(body, Mapping) else None
    code = int(error.get("code") or 0) if isinstance(error, Mapping) and str(error.get("code", "")).isdigit() else 0
    message = str(error.get("message") or "") if isinstance(error, Mapping) else ""
    if code == TOKEN_INVALID:
        return TokenInvalid(message)
    if code in RATE_LIMITS or status == 429:
        return SendRefused(code, message, slow=True)
    if code in PERMANENT:
        return SendRejected(code, PERMANENT[code], message)
    if status >= 500:
        return SendRefused(code, message or f"HTTP {status}")
    return SendRejected(code, "meta_rejected", message or f"HTTP {status}")


def whatsapp_text(reply_to: ReplyTo, text: str, callback: str) -> dict[str, Any]:
    """The body of `POST /{phone-number-id}/messages` for a text reply."""
    return {
        "messaging_product": "whatsapp",
        "recipient_type": "individual",
        "to": reply_to.recipient,
        "type": "text",
        "text": {"preview_url": False, "body": text},
        "biz_opaque_callback_data": callback,
    }


def send_api_text(reply_to: ReplyTo, text: str) -> dict[str, Any]:
    """The body of the Send API's `POST /{page-id}/messages` (Messenger and Instagram)."""
    return {"recipient": {"id": reply_to.recipient}, "messaging_type": "RESPONSE", "message": {"text": text}}


def callback(tenant: str, conversation: str, token: str, attempt: int) -> str:
    """Our reference for one attempt, carried back in WhatsApp's statuses. Opaque: it holds the
    conversation id, so it is never logged."""
    raw = json.dumps([tenant, conversation, token, attempt], separators=(",", ":")).encode()
    return CALLBACK_PREFIX + base64.urlsafe_b64encode(raw).decode().rstrip("=")


def read_callback(value: str) -> tuple[str, str, str, int] | None:
    """(tenant, conversation, token, attempt) of a reference this code made; None otherwise."""
    if not value.startswith(CALLBACK_PREFIX):
        return None
    encoded = value[len(CALLBACK_PREFIX) :]
    try:
        tenant, conversation, token, attempt = json.loads(base64.urlsafe_b64decode(encoded + "=" * (-len(encoded) % 4)))
        return str(tenant), str(conversation), str(token), int(attempt)
    except (ValueError, TypeError):
        return None
