"""Reading the units of work out of a Meta webhook delivery, defensively.

A delivery is `{"object": ..., "entry": [{"id": business, "changes": [{"field", "value"}],
"messaging": [...]}]}`. One delivery may batch many messages, statuses and comments. A unit
lacking what identifies it (a message without an id, say) is counted as ignored rather than
failing the delivery: the rest of it is still good, and no retry would add the missing id.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from pipeline.domain.errors import PermanentError

COMMENT_FIELDS = frozenset({"feed", "comments", "live_comments", "mentions"})
COMMENT_VERBS = frozenset({"add", "edited"})


@dataclass(frozen=True)
class InboundMessage:
    id: str
    sender: str
    timestamp: int
    type: str
    text: str
    channel: str
    """whatsapp, messenger or instagram."""


@dataclass(frozen=True)
class StatusUpdate:
    message_id: str
    status: str
    timestamp: int
    recipient: str
    callback: str = ""
    """`biz_opaque_callback_data`: the reference a reply was sent with (tasks/replies.py)."""


@dataclass(frozen=True)
class Comment:
    id: str
    post_id: str
    author: str
    text: str


@dataclass
class Units:
    messages: list[InboundMessage] = field(default_factory=list)
    statuses: list[StatusUpdate] = field(default_factory=list)
    comments: list[Comment] = field(default_factory=list)
    ignored: int = 0


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _int(value: Any) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        return 0


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _dicts(value: Any) -> list[Mapping[str, Any]]:
    return [v for v in value if isinstance(v, Mapping)] if isinstance(value, list) else []


def _whatsapp(value: Mapping[str, Any], units: Units) -> None:
    for message in _dicts(value.get("messages")):
        message_id = _text(message.get("id"))
        if not message_id:
            units.ignored += 1
            continue
        kind = _text(message.get("type")) or "unknown"
        body = _mapping(message.get(kind))
        units.messages.append(
            InboundMessage(
                id=message_id,
                sender=_text(message.get("from")),
                timestamp=_int(message.get("timestamp")),
                type=kind,
                text=_text(body.get("body") or body.get("caption")),
                channel="whatsapp",
            )
        )
    for status in _dicts(value.get("statuses")):
        message_id, name = _text(status.get("id")), _text(status.get("status"))
        if not message_id or not name:
            units.ignored += 1
            continue
        units.statuses.append(
            StatusUpdate(
                message_id,
                name,
                _int(status.get("timestamp")),
                _text(status.get("recipient_id")),
                _text(status.get("biz_opaque_callback_data")),
            )
        )


def add_comment(value: Mapping[str, Any], units: Units) -> None:
    if value.get("item", "comment") != "comment" or value.get("verb", "add") not in COMMENT_VERBS:
        units.ignored += 1  # reactions, removals, posts: not for triage
        return
    # Page feed changes name the comment `comment_id`; Instagram's `comments` field calls it `id`
    # and hangs it off a `media` object instead of a post.
    comment_id = _text(value.get("comment_id") or value.get("id"))
    if not comment_id:
        units.ignored += 1
        return
    author = _mapping(value.get("from"))
    media = _mapping(value.get("media"))
    units.comments.append(
        Comment(
            id=comment_id,
            post_id=_text(value.get("post_id") or media.get("id")),
            author=_text(author.get("id")),
            text=_text(value.get("message") or value.get("text")),
        )
    )


def _messaging(event: Mapping[str, Any], channel: str, units: Units) -> None:
    message = event.get("message")
    if not isinstance(message, Mapping):
        units.ignored += 1  # deliveries, reads, postbacks: nothing to store
        return
    message_id = _text(message.get("mid"))
    if not message_id:
        units.ignored += 1
        return
    sender = _mapping(event.get("sender"))
    units.messages.append(
        InboundMessage(
            id=message_id,
            sender=_text(sender.get("id")),
            timestamp=_int(event.get("timestamp")) // 1000,  # Messenger stamps milliseconds
            type="text" if "text" in message else "attachment",
            text=_text(message.get("text")),
            channel=channel,
        )
    )


def read(payload: Any) -> Units:
    """Every message, status and comment in a delivery. Raises PermanentError when the payload is
    not a delivery at all."""
    if not isinstance(payload, Mapping) or not isinstance(payload.get("entry"), list):
        raise PermanentError("not_a_delivery", "payload has no entry list")
    channel = "instagram" if payload.get("object") == "instagram" else "messenger"
    units = Units()
    for entry in _dicts(payload["entry"]):
        for change in _dicts(entry.get("changes")):
            value = change.get("value")
            if not isinstance(value, Mapping):
                units.ignored += 1
            elif change.get("field") in COMMENT_FIELDS:
                add_comment(value, units)
            elif change.get("field") == "messages":
                _whatsapp(value, units)
            else:
                units.ignored += 1
        for event in _dicts(entry.get("messaging")):
            _messaging(event, channel, units)
    return units
