"""Lane, tenant and kind for a Meta delivery, chosen at the door from what the work is.

Comment and feed changes go to the engagement lane, so a campaign that draws thousands of comments
never queues in front of a customer's message. Anything else goes to the messages lane: a batch
that mixes comments with messages, and anything unrecognised, is wrong for volume but right for
correctness (that lane is always consumed, and promptly); a message must never wait behind a
comment flood because it shared a delivery with one.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from pipeline.settings import tenant_ids

MESSAGES_LANE = "messages"
ENGAGEMENT_LANE = "engagement"

WEBHOOK_LANES = frozenset({MESSAGES_LANE, ENGAGEMENT_LANE})
"""Every lane `lane_for` can return; a test proves each has a queue and a consumer."""

COMMENT_FIELDS = frozenset({"feed", "comments", "live_comments", "mentions"})
MESSAGING = "messaging"
"""Messenger and Instagram direct messages arrive as `entry[].messaging`, not as `changes`."""
UNKNOWN_TENANT = tenant_ids.UNKNOWN

_PRODUCTS = {"whatsapp_business_account": "whatsapp", "page": "page", "instagram": "instagram"}

SUBSCRIBED_FIELDS: dict[str, tuple[str, ...]] = {
    "page": ("feed", "message_echoes", "messages"),
    "instagram": ("comments", "messages"),
    "whatsapp": ("messages",),
}
"""The webhook fields each product's subscription needs for what this router sends to a lane and
the lanes' tasks act on (tasks/meta.py): a Page's messages, its echoes (the business's own
replies, stored as outgoing) and its feed (comments); an Instagram account's messages and
comments; a WhatsApp Business Account's messages (which carry the statuses too). `lanectl meta
check` flags a Page or Instagram account subscribed without one of them. A WhatsApp account's
fields are the app's (set once in the app's dashboard), so for it only the app's subscription is
checked."""
_KIND_PART = re.compile(r"[^a-z0-9_]+")
_KIND_PART_LENGTH = 32


@dataclass(frozen=True)
class Route:
    lane: str
    tenant: str
    kind: str


def _entries(payload: Any) -> list[dict[str, Any]]:
    if not isinstance(payload, dict):
        return []
    entries = payload.get("entry")
    if not isinstance(entries, list):
        return []
    return [entry for entry in entries if isinstance(entry, dict)]


def _fields(payload: Any) -> list[Any]:
    """The field of every unit of work in the delivery: each change's `field`, and `messaging`
    for each entry that carries direct messages."""
    fields: list[Any] = []
    for entry in _entries(payload):
        changes = entry.get("changes")
        if isinstance(changes, list):
            fields.extend(change.get("field") if isinstance(change, dict) else None for change in changes)
        if entry.get(MESSAGING) is not None:
            fields.append(MESSAGING)
    return fields


def lane_for(payload: Any) -> str:
    fields = _fields(payload)
    if fields and all(isinstance(f, str) and f in COMMENT_FIELDS for f in fields):
        return ENGAGEMENT_LANE
    return MESSAGES_LANE


def entry_tenant(entry: Any) -> str | None:
    """The business one entry belongs to: its id (the WhatsApp Business Account, Page or Instagram
    account), a number kept as its digits; unknown for an id that could not be a message group;
    None when the entry names none."""
    value = entry.get("id") if isinstance(entry, dict) else None
    if isinstance(value, int) and not isinstance(value, bool):
        value = str(value)
    if value in (None, ""):
        return None
    return value if isinstance(value, str) and tenant_ids.is_valid(value) else UNKNOWN_TENANT


def tenant_for(payload: Any) -> str:
    """The delivery's message group: its first entry's business (`entry_tenant`). Meta batches
    entries per object, so an app subscribed to several Pages may get several businesses in one
    POST: each entry's effects are still filed under its own business (tasks/meta.py reads the
    tenant of each unit from its entry); only the delivery's place in the fair queue is the first's."""
    for entry in _entries(payload):
        tenant = entry_tenant(entry)
        if tenant is not None:
            return tenant
    return UNKNOWN_TENANT


def _kind_part(value: Any) -> str:
    cleaned = _KIND_PART.sub("_", value.lower()).strip("_")[:_KIND_PART_LENGTH] if isinstance(value, str) else ""
    return cleaned or "unknown"


def kind_for(payload: Any) -> str:
    """`<product>.<field>`, e.g. `whatsapp.messages`, `page.feed`, `instagram.messaging`; `mixed`
    when one delivery carries several fields. For logs and the lane task's dispatch; the lane is
    chosen by `lane_for`, never from this."""
    obj = payload.get("object") if isinstance(payload, dict) else None
    product = _PRODUCTS.get(obj) if isinstance(obj, str) else None
    fields = {f if isinstance(f, str) else None for f in _fields(payload)}
    field = "mixed" if len(fields) > 1 else _kind_part(next(iter(fields), None))
    return f"{product or _kind_part(obj)}.{field}"


def route(payload: Any) -> Route:
    return Route(lane=lane_for(payload), tenant=tenant_for(payload), kind=kind_for(payload))
