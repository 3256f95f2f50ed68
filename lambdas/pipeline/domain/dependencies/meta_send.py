"""Sending a reply through Meta: what is sent, what Meta's answers mean, and the reply's states.

Meta's send APIs have no idempotency key: a request whose answer never came (a timeout after it
left, a connection dropped mid-answer) may have been sent. So a reply is sent at most once by
recording each attempt before the call (the reply item's `send_state` moves to `calling` with a
conditional write, tasks/replies.py) and never calling again while an attempt's outcome is
unknown. WhatsApp carries our reference back in the statuses of the message it sent
(`biz_opaque_callback_data`), which resolves an unknown attempt as sent; an attempt nothing
resolves within the lane's window is left unanswered, counted and alarmed, never resent.

The reference is signed (`callback`): an HMAC-SHA256 over what it names (tenant, conversation,
turn, attempt, and the phone-number id the reply was sent from), under the reply callback key
(domain/dependencies/callback_keys.py). Anyone can put any `biz_opaque_callback_data` on a message
sent from any number, so a status moves a reply only when the reference verifies under our key
and the status came from the number it names (`read_callback`, tasks/messages.py).

Meta's error codes (the `error.code` of its JSON error body):
- rate limits (130429 throughput, 131056 pair rate, 80007 account rate, 4 and 613 call rate): the
  request was refused, so nothing was sent; retried no sooner than Meta asks (`SendRefused.pace`):
  the pair rate allows about one message every 6 s to one customer, so its retry waits 6 to 12 s,
  doubling the ceiling each attempt; the others back off exponentially from a second (1 to 4 s,
  then up to 8, 16, ...). Every one but the pair rate also says the sending number is over its
  rate, which slows the number's other replies too (domain/consumer/task_context.py);
- 131047 (outside the 24-hour customer service window) and 131026 (undeliverable): permanent, the
  reply is left unanswered with that reason;
- 190 (the access token is invalid or expired): no reply can be sent until it is replaced, a
  reason to stop the lane;
- 2 and 131016 (service temporarily unavailable) with a 5xx: Meta says it took nothing: refused,
  retried;
- any other 5xx (Meta's 1 or 131000, "something went wrong", or a gateway's 502/504 with no Meta
  body at all): an unknown outcome, exactly like an answer that never came. A 500 may follow a
  message Meta accepted, so it is never resent: the reply waits for Meta's status;
- another 4xx: permanent.

No HTTP library here: adapters/graph_api.py makes the calls.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from pipeline.domain.errors import MESSAGE_LIMIT, Pace, PermanentError, TransientError
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
FAILED = "failed"
"""Final: Meta accepted the reply, then reported it `failed` in a status (with its error code,
`failed_code`): the customer never got it."""

RATE_LIMITS = frozenset({130429, 131056, 80007, 4, 613})
PAIR_RATE = 131056
"""One business number to one customer, too often: only that customer's replies must wait."""
PAIR_PACE = Pace(floor_seconds=6.0, ceiling_seconds=12.0)
"""Meta's pair rate is about one message every 6 s to the same customer."""
THROUGHPUT_PACE = Pace(floor_seconds=1.0, ceiling_seconds=4.0)
"""Meta asks for an exponential backoff from seconds; a floor of one second is also the sending
number's whole rate window, which its other replies are held off for."""
PERMANENT = {131047: "outside_service_window", 131026: "undeliverable"}
TOKEN_INVALID = 190
UNAVAILABLE = frozenset({2, 131016})
"""Meta's "service temporarily unavailable": with a 5xx, the one answer that says nothing was taken."""
CALLBACK_PREFIX = "lanes2:"
CALLBACK_LIMIT = 512
"""Meta's limit on `biz_opaque_callback_data`, in characters."""
MAC_BYTES = 16


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
            self.pace = PAIR_PACE if code == PAIR_RATE else THROUGHPUT_PACE

    @property
    def number_over_rate(self) -> bool:
        """The sending number itself is over its rate (every rate limit but the pair rate's)."""
        return self.slow and self.code != PAIR_RATE


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
    """The request left and no answer saying what became of it came back: it may have been sent.
    Not retried. `reason` says why: no answer at all, or a server error from Meta's side."""

    def __init__(self, message: str, reason: str = "no_answer") -> None:
        super().__init__(message[:MESSAGE_LIMIT])
        self.reason = reason


class NotSent(TransientError):
    """The request never reached Meta (no connection): nothing was sent."""

    reason = "meta_unreachable"


def error_for(status: int, body: Any) -> Exception:
    """The error for a Graph API error answer to a send (`{"error": {"code": ..., "message": ...}}`):
    an OutcomeUnknown for a 5xx that does not say Meta took nothing."""
    error = body.get("error") if isinstance(body, Mapping) else None
    code = int(error.get("code") or 0) if isinstance(error, Mapping) and str(error.get("code", "")).isdigit() else 0
    message = str(error.get("message") or "") if isinstance(error, Mapping) else ""
    if code == TOKEN_INVALID:
        return TokenInvalid(message)
    if code in RATE_LIMITS or status == 429:
        return SendRefused(code, message, slow=True)
    if code in PERMANENT:
        return SendRejected(code, PERMANENT[code], message)
    if status >= 500 and code in UNAVAILABLE:
        return SendRefused(code, message or f"HTTP {status}")
    if status >= 500:
        return OutcomeUnknown(f"HTTP {status} ({code or 'no Meta code'})", reason="meta_server_error")
    return SendRejected(code, "meta_rejected", message or f"HTTP {status}")


def whatsapp_text(reply_to: ReplyTo, text: str, callback: str) -> dict[str, Any]:
    """The body of `POST /{phone-number-id}/messages` for a text reply: to a phone number in `to`,
    or to a business-scoped user id in `recipient` (`to` left out), as the Cloud API takes it since
    WhatsApp usernames (Meta's "Business-scoped user IDs" page; pywa's `send_message`)."""
    return {
        "messaging_product": "whatsapp",
        "recipient_type": "individual",
        ("recipient" if reply_to.by_bsuid else "to"): reply_to.recipient,
        "type": "text",
        "text": {"preview_url": False, "body": text},
        "biz_opaque_callback_data": callback,
    }


OWN_REPLY_METADATA = "lanes-reply"
"""The Send API's `metadata` on every reply we send: Meta hands it back on the reply's echo, so
the messages lane tells our own replies from a person's (only a person's pauses auto-reply)."""


def send_api_text(reply_to: ReplyTo, text: str) -> dict[str, Any]:
    """The body of the Send API's `POST /{page-id}/messages` (Messenger and Instagram)."""
    return {
        "recipient": {"id": reply_to.recipient},
        "messaging_type": "RESPONSE",
        "message": {"text": text, "metadata": OWN_REPLY_METADATA},
    }


class CallbackRef(NamedTuple):
    """What a reply's reference names: the attempt, and the number it was sent from."""

    tenant: str
    conversation: str
    token: str
    attempt: int
    business_id: str
    """The phone-number id the reply was sent from: only a status from that number may resolve it."""


def _mac(key: bytes, encoded: str) -> str:
    digest = hmac.new(key, (CALLBACK_PREFIX + encoded).encode(), hashlib.sha256).digest()[:MAC_BYTES]
    return base64.urlsafe_b64encode(digest).decode().rstrip("=")


def callback(ref: CallbackRef, key: bytes) -> str:
    """Our signed reference for one attempt, carried back in WhatsApp's statuses. It holds the
    conversation id, so it is never logged. Raises PermanentError when Meta would refuse its length."""
    raw = json.dumps(list(ref), separators=(",", ":")).encode()
    encoded = base64.urlsafe_b64encode(raw).decode().rstrip("=")
    value = f"{CALLBACK_PREFIX}{encoded}.{_mac(key, encoded)}"
    if len(value) > CALLBACK_LIMIT:
        raise PermanentError(
            "reply_reference_too_long", f"the reply's reference is {len(value)} characters; Meta takes {CALLBACK_LIMIT}"
        )
    return value


def peek_callback(value: str) -> CallbackRef | None:
    """What a reference says it names, unauthenticated: for counting what was sent (the local
    runtime's outbox, the benches). Never act on it: `read_callback` is what verifies."""
    if not value.startswith(CALLBACK_PREFIX) or value.count(".") != 1:
        return None
    encoded = value[len(CALLBACK_PREFIX) :].split(".", 1)[0]
    try:
        tenant, conversation, token, attempt, business = json.loads(
            base64.urlsafe_b64decode(encoded + "=" * (-len(encoded) % 4))
        )
        return CallbackRef(str(tenant), str(conversation), str(token), int(attempt), str(business))
    except (ValueError, TypeError):
        return None


def read_callback(value: str, keys: Sequence[bytes]) -> CallbackRef | None:
    """The attempt a reference names, when one of `keys` signed it; None for anything else (a
    forged or altered reference, someone else's data, one signed with a retired key)."""
    if not value.startswith(CALLBACK_PREFIX) or value.count(".") != 1:
        return None
    encoded, mac = value[len(CALLBACK_PREFIX) :].split(".", 1)
    if not any(hmac.compare_digest(_mac(key, encoded), mac) for key in keys):
        return None
    return peek_callback(value)
