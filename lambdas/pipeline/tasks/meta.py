"""Reading the units of work out of a Meta webhook delivery, defensively.

A delivery is `{"object": ..., "entry": [{"id": business, "changes": [{"field", "value"}],
"messaging": [...]}]}`. One delivery may batch many messages, statuses and comments. A unit
lacking what identifies it (a message without an id, say) is counted as ignored rather than
failing the delivery: the rest of it is still good, and no retry would add the missing id.
A unit whose ids UTF-8 cannot carry (an unpaired surrogate, which JSON can spell) is skipped and
counted as `unprocessable`: no table would take the item, and no retry would mend it. Its text
is a different matter: a text is kept, made well formed (domain/stored_text.py).

Everything a delivery holds that the pipeline does not act on is counted in `Units.ignored` by a
name saying what it was (`field.mention`, `status.played`, `messaging.read`, `message.no_id`):
the consumer turns those into the `MetaIgnored` metric by name, so an operator sees what is
dropped, and a field Meta starts sending shows up there first.

Every unit's time is epoch seconds, whichever unit Meta stamped it in (WhatsApp: seconds, as a
string; Messenger and Instagram: milliseconds), told apart by size (domain/epoch.py); 0 when it is
missing or not a number.

Each unit carries the business of the entry it came in (`tenant`, routing.entry_tenant): Meta
batches entries per object, so one delivery to an app subscribed to several Pages or WhatsApp
Business Accounts holds several businesses, and each unit's effects are filed under its own, never
under the delivery's first. A unit of an entry naming no business is the delivery's (`tenant_of`).

WhatsApp's business-scoped user ids (Meta's 2026 username rollout; domain/senders.py has their
shape) come as Meta's "Business-scoped user IDs" page and pywa (`User.from_contact`, its
`callback_button.json` test delivery) show them: a message's `from` (the phone number, absent for a
username-only customer) beside `from_user_id` (the BSUID) and `from_parent_user_id`; a contact's
`wa_id` (maybe absent) beside `user_id`, `parent_user_id` and `profile.username`; a status's
`recipient_id` (maybe absent) beside `recipient_user_id` and `recipient_parent_user_id`, and the
`contacts` of a delivered or read status. A unit is about its phone number when it has one and its
BSUID otherwise (senders.whatsapp_person).

A Messenger or Instagram echo (`message.is_echo`: Meta's copy of a message the business itself
sent, `sender` the business and `recipient` the customer) is the business's outgoing message to
that customer: stored as such, in the customer's partition, where their erasure finds it. So is
WhatsApp's `smb_message_echoes` (a message a person sent from the WhatsApp Business app, `from` the
business, `to` the customer). A Messenger or Instagram echo carrying our own replies' `metadata`
is marked `ours`: only a person's echo pauses auto-reply (tasks/auto_reply.py).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from pipeline.domain import epoch, senders, stored_text
from pipeline.domain.dependencies.meta_send import OWN_REPLY_METADATA
from pipeline.domain.errors import PermanentError
from pipeline.domain.webhook import routing

SMB_ECHOES = "smb_message_echoes"
"""WhatsApp's copy of a message a person sent from the WhatsApp Business app (coexistence)."""
COMMENT_FIELDS = frozenset({"feed", "comments", "live_comments", "mentions"})
COMMENT_VERBS = frozenset({"add", "edited"})
INBOUND = "inbound"
OUTGOING = "outgoing"
_NAME = re.compile(r"[a-z0-9_]{1,40}")
OTHER = "other"
"""What a name Meta sent is counted as when it is not a plain field name: a metric's dimension
must stay a small set."""
_EVENT_ENDS = frozenset({"sender", "recipient", "timestamp"})


@dataclass(frozen=True)
class WhatsAppIds:
    """What Meta's username rollout adds about a WhatsApp customer (see the module docstring)."""

    phone: str = ""
    user_id: str = ""
    """The BSUID."""
    parent_user_id: str = ""
    username: str = ""

    @property
    def linked_bsuid(self) -> str:
        """The BSUID of a customer also named by phone number: their items live under the number,
        and this second id must find them too (tasks/messages.py)."""
        return self.user_id if self.phone and self.user_id else ""

    def stored(self) -> dict[str, str]:
        """The fields an item about the customer keeps, only those Meta sent."""
        fields = {"user_id": self.user_id, "parent_user_id": self.parent_user_id, "username": self.username}
        return {name: value for name, value in fields.items() if value}


@dataclass(frozen=True)
class InboundMessage:
    id: str
    sender: str
    timestamp: int
    type: str
    text: str
    channel: str
    """whatsapp, messenger or instagram."""
    recipient: str = ""
    direction: str = INBOUND
    """OUTGOING for an echo: `sender` is the business, `recipient` the customer."""
    tenant: str = ""
    """The business of the entry it came in (routing.entry_tenant); "" when the entry names none."""
    ids: WhatsAppIds = field(default_factory=WhatsAppIds)
    """A WhatsApp customer's business-scoped ids and username, as far as Meta sent them."""
    business_id: str = ""
    """The asset the message was written to, which a reply is sent from: WhatsApp's
    `metadata.phone_number_id`, the entry's Page or Instagram account on Messenger and Instagram."""
    ours: bool = False
    """An echo of a reply this pipeline sent (the Send API's `metadata`, OWN_REPLY_METADATA)."""
    app_id: str = ""
    """A Messenger or Instagram echo's `app_id`: the app that sent the message, "" for none."""

    @property
    def person(self) -> str:
        """The customer the message is about, whichever way it went."""
        return self.recipient if self.direction == OUTGOING else self.sender


@dataclass(frozen=True)
class StatusUpdate:
    message_id: str
    status: str
    timestamp: int
    recipient: str
    callback: str = ""
    """`biz_opaque_callback_data`: the reference a reply was sent with (tasks/replies.py)."""
    business_id: str = ""
    """The phone-number id the message was sent from (its change's `metadata.phone_number_id`)."""
    error_code: int = 0
    """A `failed` status's reason: Meta's code in its first `errors` entry (131047, 131026, ...)."""
    tenant: str = ""
    """The business of the entry it came in (routing.entry_tenant); "" when the entry names none."""
    ids: WhatsAppIds = field(default_factory=WhatsAppIds)
    """The recipient's business-scoped ids and username, as far as Meta sent them."""


@dataclass(frozen=True)
class Comment:
    id: str
    post_id: str
    author: str
    text: str
    tenant: str = ""
    """The business of the entry it came in (routing.entry_tenant); "" when the entry names none."""


@dataclass
class Units:
    messages: list[InboundMessage] = field(default_factory=list)
    statuses: list[StatusUpdate] = field(default_factory=list)
    comments: list[Comment] = field(default_factory=list)
    ignored: Counter[str] = field(default_factory=Counter)
    """What was not acted on, by name (see the module docstring)."""
    unprocessable: int = 0
    """Units skipped because an id of theirs cannot be stored (see the module's docstring)."""

    def ignore(self, kind: str, name: object) -> None:
        """Count one unit of `kind` (field, status, messaging, ...) named `name` by Meta."""
        text = name if isinstance(name, str) else ""
        self.ignored[f"{kind}.{text if _NAME.fullmatch(text) else OTHER}"] += 1


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _int(value: Any) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        return 0


def _storable(units: Units, *ids: str) -> bool:
    if all(stored_text.is_well_formed(value) for value in ids):
        return True
    units.unprocessable += 1
    return False


def _time(value: Any) -> int:
    """Epoch seconds, whichever unit Meta stamped (domain/epoch.py); 0 for a missing or garbled
    one. Only shown and stored beside the unit: no order is decided by it, so a time ahead of
    ours is kept as Meta sent it."""
    at = epoch.seconds(value)
    return 0 if at is None else int(at)


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _dicts(value: Any) -> list[Mapping[str, Any]]:
    return [v for v in value if isinstance(v, Mapping)] if isinstance(value, list) else []


def _contacts(value: Mapping[str, Any]) -> dict[str, WhatsAppIds]:
    """The change's contacts, by each id they carry (a message or status names its customer by
    either)."""
    found: dict[str, WhatsAppIds] = {}
    for contact in _dicts(value.get("contacts")):
        ids = WhatsAppIds(
            phone=_text(contact.get("wa_id")),
            user_id=_text(contact.get("user_id")),
            parent_user_id=_text(contact.get("parent_user_id")),
            # A name, kept as a text is (made well formed); the ids must be storable as they are.
            username=stored_text.well_formed(_text(_mapping(contact.get("profile")).get("username"))),
        )
        for key in (ids.phone, ids.user_id):
            if key:
                found[key] = ids
    return found


def _ids(contacts: Mapping[str, WhatsAppIds], phone: str, user_id: str, parent_user_id: str) -> WhatsAppIds:
    contact = contacts.get(phone) or contacts.get(user_id) or WhatsAppIds()
    return WhatsAppIds(
        phone=phone,
        user_id=user_id or contact.user_id,
        parent_user_id=parent_user_id or contact.parent_user_id,
        username=contact.username,
    )


def _whatsapp(value: Mapping[str, Any], units: Units, tenant: str, *, echoes: bool = False) -> None:
    """`echoes`: the value is an `smb_message_echoes` change, a message a person sent the
    customer from the WhatsApp Business app (`from` the business's number, `to` the customer)."""
    contacts = _contacts(value)
    phone_number_id = _text(_mapping(value.get("metadata")).get("phone_number_id"))
    for message in _dicts(value.get("message_echoes" if echoes else "messages")):
        message_id = _text(message.get("id"))
        if not message_id:
            units.ignore("message", "no_id")
            continue
        if echoes:
            ids = WhatsAppIds()
            sender, recipient = _text(message.get("from")), _text(message.get("to"))
        else:
            ids = _ids(
                contacts,
                _text(message.get("from")),
                _text(message.get("from_user_id")),
                _text(message.get("from_parent_user_id")),
            )
            sender, recipient = senders.whatsapp_person(ids.phone, ids.user_id), ""
        if not _storable(units, message_id, sender, recipient, ids.user_id, ids.parent_user_id):
            continue
        kind = _text(message.get("type")) or "unknown"
        body = _mapping(message.get(kind))
        units.messages.append(
            InboundMessage(
                id=message_id,
                sender=sender,
                timestamp=_time(message.get("timestamp")),
                type=stored_text.well_formed(kind),
                text=_text(body.get("body") or body.get("caption")),
                channel="whatsapp",
                recipient=recipient,
                direction=OUTGOING if echoes else INBOUND,
                tenant=tenant,
                ids=ids,
                business_id=phone_number_id if stored_text.is_well_formed(phone_number_id) else "",
            )
        )
    if echoes:
        return
    for status in _dicts(value.get("statuses")):
        message_id, name = _text(status.get("id")), _text(status.get("status"))
        if not message_id or not name:
            units.ignore("status", "no_id")
            continue
        ids = _ids(
            contacts,
            _text(status.get("recipient_id")),
            _text(status.get("recipient_user_id")),
            _text(status.get("recipient_parent_user_id")),
        )
        recipient = senders.whatsapp_person(ids.phone, ids.user_id)
        callback = _text(status.get("biz_opaque_callback_data"))
        if not _storable(units, message_id, recipient, callback, ids.user_id, ids.parent_user_id):
            continue
        errors = _dicts(status.get("errors"))
        units.statuses.append(
            StatusUpdate(
                message_id,
                name,
                _time(status.get("timestamp")),
                recipient,
                callback,
                _text(_mapping(value.get("metadata")).get("phone_number_id")),
                _int(errors[0].get("code")) if errors else 0,
                tenant=tenant,
                ids=ids,
            )
        )


def add_comment(value: Mapping[str, Any], units: Units, tenant: str = "") -> None:
    item, verb = value.get("item", "comment"), value.get("verb", "add")
    if item != "comment":
        units.ignore("feed_item", item)  # reactions, posts, likes: not for triage
        return
    if verb not in COMMENT_VERBS:
        units.ignore("comment_verb", verb)  # removals, hides
        return
    # Page feed changes name the comment `comment_id`; Instagram's `comments` field calls it `id`
    # and hangs it off a `media` object instead of a post.
    comment_id = _text(value.get("comment_id") or value.get("id"))
    if not comment_id:
        units.ignore("comment", "no_id")
        return
    author = _text(_mapping(value.get("from")).get("id"))
    post_id = _text(value.get("post_id") or _mapping(value.get("media")).get("id"))
    if not _storable(units, comment_id, author, post_id):
        return
    units.comments.append(
        Comment(
            id=comment_id,
            post_id=post_id,
            author=author,
            text=_text(value.get("message") or value.get("text")),
            tenant=tenant,
        )
    )


def _messaging(event: Mapping[str, Any], channel: str, units: Units, tenant: str) -> None:
    message = event.get("message")
    if not isinstance(message, Mapping):
        # Deliveries, reads, postbacks, reactions: nothing to store, named by their own key.
        units.ignore("messaging", next((key for key in event if key not in _EVENT_ENDS), None))
        return
    message_id = _text(message.get("mid"))
    if not message_id:
        units.ignore("message", "no_id")
        return
    sender = _text(_mapping(event.get("sender")).get("id"))
    recipient = _text(_mapping(event.get("recipient")).get("id"))
    if not _storable(units, message_id, sender, recipient):
        return
    units.messages.append(
        InboundMessage(
            id=message_id,
            sender=sender,
            timestamp=_time(event.get("timestamp")),  # milliseconds, as Messenger stamps them
            type="text" if "text" in message else "attachment",
            text=_text(message.get("text")),
            channel=channel,
            recipient=recipient,
            direction=OUTGOING if message.get("is_echo") is True else INBOUND,
            tenant=tenant,
            business_id=tenant,
            ours=message.get("metadata") == OWN_REPLY_METADATA,
            app_id=_app_id(message.get("app_id")),
        )
    )


def _app_id(value: Any) -> str:
    """Meta writes an app id as a JSON number; a number, or digits, or nothing."""
    text = str(value) if isinstance(value, int | str) and not isinstance(value, bool) else ""
    return text if text.isascii() and text.isdigit() else ""


def read(payload: Any) -> Units:
    """Every message, status and comment in a delivery. Raises PermanentError when the payload is
    not a delivery at all."""
    if not isinstance(payload, Mapping) or not isinstance(payload.get("entry"), list):
        raise PermanentError("not_a_delivery", "payload has no entry list")
    channel = "instagram" if payload.get("object") == "instagram" else "messenger"
    units = Units()
    for entry in _dicts(payload["entry"]):
        tenant = routing.entry_tenant(entry) or ""
        for change in _dicts(entry.get("changes")):
            value = change.get("value")
            name = change.get("field")
            if not isinstance(value, Mapping):
                units.ignore("field", name)
            elif name in COMMENT_FIELDS:
                add_comment(value, units, tenant)
            elif name == "messages":
                _whatsapp(value, units, tenant)
            elif name == SMB_ECHOES:
                _whatsapp(value, units, tenant, echoes=True)
            else:
                units.ignore("field", name)
        for event in _dicts(entry.get("messaging")):
            _messaging(event, channel, units, tenant)
    return units


def tenant_of(unit: InboundMessage | StatusUpdate | Comment, delivery_tenant: str) -> str:
    """The business a unit's effects are filed under: its entry's, or the delivery's when its
    entry named none (a comment posted as a job carries none either)."""
    return unit.tenant or delivery_tenant
