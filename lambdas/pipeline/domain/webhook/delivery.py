"""The Meta webhook's rules that need no AWS: the verification handshake, the log id, what counts
as parseable, and the envelope a logged delivery travels in."""

from __future__ import annotations

import hashlib
import hmac
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from pipeline.domain import strict_json
from pipeline.domain.envelope import INLINE_PAYLOAD_LIMIT, Envelope
from pipeline.domain.webhook.body import StoredBody
from pipeline.domain.webhook.routing import Route

LOG_ID_PREFIX = "wh-"
SOURCE = "webhook"
MAX_CHALLENGE_LENGTH = 512
"""Meta's challenge is a short number; anything longer is not Meta and is not echoed."""

INLINE_BODY_LIMIT = INLINE_PAYLOAD_LIMIT // 2
"""Raw bodies up to this size travel inline. Re-serializing can lengthen JSON (`1e5` becomes
`100000.0`), so half the envelope's budget keeps the message under the SQS limit."""

# SQS refuses U+FFFE, U+FFFF and lone surrogates in a message body. JSON may spell them as
# escapes, which `json.loads` turns into the raw characters the envelope would then carry. A
# body that mentions any of them (even a valid escaped surrogate pair) travels by reference.
_SQS_UNSAFE = re.compile(r"[\ufffe\uffff]|\\u(?:[dD][89a-fA-F][0-9a-fA-F]{2}|[fF]{3}[eEfF])")


class WebhookLogUnavailable(RuntimeError):
    """The row could not be written or read; nothing was recorded."""


@dataclass(frozen=True)
class LogEntry:
    id: str
    received_at: float
    body: StoredBody
    route: Route | None
    """None for an unparseable body."""
    expires_at: int
    """When DynamoDB's TTL deletes the row and its parts (domain/retention.py)."""
    unparseable_reason: str | None = None
    sender_hash: str | None = None
    """The one person the delivery names, hashed (domain/senders.py); None for none or several."""
    named: tuple[str, ...] = ()
    """Every person a delivery naming several names, hashed; empty for none or one."""


@dataclass(frozen=True)
class Recorded:
    created: bool
    existing_status: str | None = None
    """When not created: the status of the row already there (None if DynamoDB did not say)."""
    existing_received_at: float | None = None


class Unparseable(StrEnum):
    INVALID_UTF8 = "invalid_utf8"
    INVALID_JSON = "invalid_json"
    TOO_DEEP = "too_deep"
    NOT_AN_OBJECT = "not_an_object"
    """Valid JSON, but Meta's deliveries are always an object: nothing could process it."""


@dataclass(frozen=True)
class Parsed:
    payload: dict[str, Any] | None
    problem: Unparseable | None
    inline_safe: bool = False
    """Whether the payload may travel inside the envelope (see `_SQS_UNSAFE`)."""


def log_id(raw: bytes) -> str:
    """The webhook-log key: a digest of the exact bytes, so a redelivery of the same bytes finds
    the same row instead of making a second one."""
    return LOG_ID_PREFIX + hashlib.sha256(raw).hexdigest()


def handshake(query: Mapping[str, Sequence[str]], verify_token: str) -> str | None:
    """The challenge to echo when the request is Meta's subscription check, else None. Each
    parameter must appear exactly once; the token is compared in constant time; an empty
    configured token verifies nothing."""

    def single(name: str) -> str | None:
        values = query.get(name) or []
        return values[0] if len(values) == 1 else None

    mode, token, challenge = single("hub.mode"), single("hub.verify_token"), single("hub.challenge")
    if mode != "subscribe" or token is None or not verify_token or not challenge:
        return None
    if len(challenge) > MAX_CHALLENGE_LENGTH:
        return None
    if not hmac.compare_digest(token.encode("utf-8", "surrogateescape"), verify_token.encode("utf-8")):
        return None
    return challenge


def _depth_exceeds(value: Any, limit: int) -> bool:
    """Iterative, so a hostile structure cannot exhaust the stack here; stops at the first
    container past the limit. The top-level object is depth 1."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > limit:
            return True
        children = node.values() if isinstance(node, dict) else node
        stack.extend((child, depth + 1) for child in children if isinstance(child, dict | list))
    return False


def parse(raw: bytes, max_depth: int) -> Parsed:
    """Strict JSON: UTF-8 only, no NaN/Infinity, no out-of-range numbers (they would re-serialize
    as tokens other parsers reject), at most `max_depth` levels of nesting."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return Parsed(None, Unparseable.INVALID_UTF8)
    try:
        payload = strict_json.loads(text)
    except RecursionError:
        return Parsed(None, Unparseable.TOO_DEEP)
    except ValueError:  # JSONDecodeError, our hooks, and ints past Python's digit limit
        return Parsed(None, Unparseable.INVALID_JSON)
    if not isinstance(payload, dict):
        return Parsed(None, Unparseable.NOT_AN_OBJECT)
    # Every container opens with a bracket in the text, so a body with no more brackets than the
    # limit cannot nest past it: a typical delivery skips the walk (about a tenth of the door's time).
    if raw.count(b"{") + raw.count(b"[") > max_depth and _depth_exceeds(payload, max_depth):
        return Parsed(None, Unparseable.TOO_DEEP)
    safe = len(raw) <= INLINE_BODY_LIMIT and _SQS_UNSAFE.search(text) is None
    return Parsed(payload, None, inline_safe=safe)


def envelope(row_id: str, route: Route, parsed: Parsed, received_at: float) -> Envelope:
    """The message for a logged delivery: the payload inline when it is small and SQS can carry
    it, otherwise `ref` = the log id (the consumer reads the row's body)."""
    return Envelope(
        id=row_id,
        lane=route.lane,
        tenant=route.tenant,
        kind=route.kind,
        source=SOURCE,
        created_at=received_at,
        payload=parsed.payload if parsed.inline_safe else None,
        ref=None if parsed.inline_safe else row_id,
    )
