"""Hypothesis strategies for webhook deliveries shaped as Meta sends them, each drawn with the
route it must get: WhatsApp messages and statuses, Instagram comments and direct messages,
Messenger page feed changes, and batches of several entries.

The expected route is known by construction (what was drawn), not computed by the code under
test: the lane from the kinds of work drawn, the tenant from the first entry's id, the kind from
the object and the fields.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from hypothesis import strategies as st

from pipeline.domain.webhook.routing import ENGAGEMENT_LANE, MESSAGES_LANE, Route

# Text a person might type, minus what SQS cannot carry (U+FFFE, U+FFFF, lone surrogates): those
# are drawn on purpose elsewhere.
texts = st.text(st.characters(exclude_categories=("Cs",), exclude_characters="\ufffe\uffff"), max_size=20)
meta_ids = st.integers(min_value=10**5, max_value=10**18 - 1).map(str)
timestamps = st.integers(min_value=1_600_000_000, max_value=1_900_000_000)
wamids = st.integers(min_value=0, max_value=2**96).map(lambda n: f"wamid.HBgL{n:x}")
phones = st.integers(min_value=10**7, max_value=10**15 - 1).map(str)

INSTAGRAM_COMMENT_FIELDS = ("comments", "live_comments", "mentions")


@dataclass(frozen=True)
class Delivery:
    payload: dict[str, Any]
    route: Route


@st.composite
def whatsapp_message(draw: st.DrawFn) -> dict[str, Any]:
    return {
        "from": draw(phones),
        "id": draw(wamids),
        "timestamp": str(draw(timestamps)),
        "type": "text",
        "text": {"body": draw(texts)},
    }


@st.composite
def whatsapp_status(draw: st.DrawFn) -> dict[str, Any]:
    return {
        "id": draw(wamids),
        "status": draw(st.sampled_from(["sent", "delivered", "read", "failed"])),
        "timestamp": str(draw(timestamps)),
        "recipient_id": draw(phones),
    }


@st.composite
def whatsapp_change(draw: st.DrawFn) -> dict[str, Any]:
    value: dict[str, Any] = {
        "messaging_product": "whatsapp",
        "metadata": {"display_phone_number": draw(phones), "phone_number_id": draw(meta_ids)},
    }
    messages = draw(st.lists(whatsapp_message(), max_size=3))
    statuses = draw(st.lists(whatsapp_status(), max_size=3, min_size=0 if messages else 1))
    if messages:
        value["contacts"] = [{"profile": {"name": draw(texts)}, "wa_id": message["from"]} for message in messages]
        value["messages"] = messages
    if statuses:
        value["statuses"] = statuses
    return {"field": "messages", "value": value}


def _entry_id(draw: st.DrawFn) -> tuple[Any, str]:
    """An entry id as Meta spells it (a string of digits, now and then a JSON number) and the
    tenant it names."""
    text = draw(meta_ids)
    return (int(text), text) if draw(st.booleans()) else (text, text)


@st.composite
def whatsapp_delivery(draw: st.DrawFn) -> Delivery:
    entries, tenant = [], ""
    for _ in range(draw(st.integers(min_value=1, max_value=3))):
        entry_id, name = _entry_id(draw)
        tenant = tenant or name
        changes = draw(st.lists(whatsapp_change(), min_size=1, max_size=2))
        entries.append({"id": entry_id, "changes": changes})
    payload = {"object": "whatsapp_business_account", "entry": entries}
    return Delivery(payload, Route(MESSAGES_LANE, tenant, "whatsapp.messages"))


@st.composite
def instagram_comment_change(draw: st.DrawFn) -> dict[str, Any]:
    field = draw(st.sampled_from(INSTAGRAM_COMMENT_FIELDS))
    value: dict[str, Any] = {"from": {"id": draw(meta_ids), "username": draw(texts)}, "text": draw(texts)}
    value["id"] = draw(meta_ids)
    if field != "mentions":
        value["media"] = {"id": draw(meta_ids), "media_product_type": "FEED"}
    return {"field": field, "value": value}


@st.composite
def instagram_message(draw: st.DrawFn, recipient: str) -> dict[str, Any]:
    return {
        "sender": {"id": draw(meta_ids)},
        "recipient": {"id": recipient},
        "timestamp": draw(timestamps) * 1000,
        "message": {"mid": f"aWdfZAG1{draw(st.integers(min_value=0, max_value=2**96)):x}", "text": draw(texts)},
    }


@st.composite
def instagram_delivery(draw: st.DrawFn) -> Delivery:
    """Entries of comment changes, of direct messages, or both; each entry is one kind or the
    other, and a batch may mix them."""
    entries: list[dict[str, Any]] = []
    fields: list[str] = []
    tenant = ""
    for _ in range(draw(st.integers(min_value=1, max_value=3))):
        entry_id, name = _entry_id(draw)
        tenant = tenant or name
        entry: dict[str, Any] = {"id": entry_id, "time": draw(timestamps)}
        if draw(st.booleans()):
            changes = draw(st.lists(instagram_comment_change(), min_size=1, max_size=3))
            entry["changes"] = changes
            fields.extend(change["field"] for change in changes)
        else:
            entry["messaging"] = draw(st.lists(instagram_message(name), min_size=1, max_size=2))
            fields.append("messaging")
        entries.append(entry)
    lane = MESSAGES_LANE if "messaging" in fields else ENGAGEMENT_LANE
    kind = "instagram." + (fields[0] if len(set(fields)) == 1 else "mixed")
    return Delivery({"object": "instagram", "entry": entries}, Route(lane, tenant, kind))


@st.composite
def page_feed_delivery(draw: st.DrawFn) -> Delivery:
    entry_id, tenant = _entry_id(draw)
    changes = [
        {
            "field": "feed",
            "value": {
                "item": "comment",
                "verb": draw(st.sampled_from(["add", "edited", "remove"])),
                "comment_id": f"{draw(meta_ids)}_{draw(meta_ids)}",
                "post_id": f"{entry_id}_{draw(meta_ids)}",
                "message": draw(texts),
                "from": {"id": draw(meta_ids), "name": draw(texts)},
                "created_time": draw(timestamps),
            },
        }
        for _ in range(draw(st.integers(min_value=1, max_value=3)))
    ]
    payload = {"object": "page", "entry": [{"id": entry_id, "time": draw(timestamps), "changes": changes}]}
    return Delivery(payload, Route(ENGAGEMENT_LANE, tenant, "page.feed"))


deliveries = st.one_of(whatsapp_delivery(), instagram_delivery(), page_feed_delivery())
"""Any Meta-shaped delivery, with its route."""

not_a_field = st.one_of(
    st.none(), st.integers(), st.booleans(), st.lists(st.integers(), max_size=2), st.dictionaries(texts, texts)
)
"""What a change's `field` could hold that is not a field name (including unhashable values)."""
not_an_object = st.one_of(st.none(), st.integers(), texts, st.lists(st.integers(), max_size=2))
"""What could stand where an entry or a change object belongs."""
