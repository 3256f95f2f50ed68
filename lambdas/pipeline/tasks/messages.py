"""messages lane: store inbound messages once, and apply delivery statuses in order.

- An inbound message is stored under its Meta id (`wamid` on WhatsApp, `mid` on Messenger and
  Instagram), created only if absent: the same message in a second delivery (Meta retries with
  different batching, so a different log row) is skipped, not duplicated or overwritten.
- A status update (sent → delivered → read, or failed) moves the message's status item forward
  only: the write is conditional on the stored rank being lower. Meta does not promise order, so
  a `delivered` arriving after `read` fails its condition, and that write alone is skipped; the
  rest of the delivery commits.
- An echo (Messenger's and Instagram's copy of the business's own message) is stored as the
  business's outgoing message (`direction`, `recipient`) in the customer's partition.
- A status carrying a reply's reference (`biz_opaque_callback_data`, tasks/replies.py) moves that
  reply only when the reference verifies under the reply callback key and the status came from
  the phone number it names (`metadata.phone_number_id`); otherwise it is stored as any status
  is, moves nothing, and is counted (`callbacks_refused`). Anyone can send a message from their
  own number carrying any reference, and a forged one must not touch another tenant's reply.
  A verified `failed` status marks its reply `failed` at once (`write_now`, so it is counted in
  `RepliesFailed` by Meta's code exactly when the reply changed, not again for a repeated status).
- Comments in a delivery that also carried messages land here (the door never lets a message
  wait behind a comment flood) and are stored for triage, untriaged.

- An echo (Messenger's and Instagram's copy of the business's own message, WhatsApp's
  `smb_message_echoes`) is stored the same way, never as an inbound message.
- Where the entry's tenant has auto-reply on (settings/auto_reply.py), each inbound message also
  starts an ai turn, and an echo or an opt-out holds the conversation (tasks/auto_reply.py); the
  line's `auto_reply` counts what each message got.

A WhatsApp customer is named by phone number when the webhook carries one and by business-scoped
user id (BSUID) otherwise (tasks/meta.py, domain/senders.py), and their items live in that id's
partition. Since April 2026 Meta sends both to most: a message or status naming both lives in the
phone number's partition and carries the BSUID's hash as its `sender_hash` (the by_sender index),
at one index write a unit. That is the link: an erasure by BSUID finds the item through the index
and, from its partition, the phone number's other items; an erasure by phone number finds the
BSUID in its partition and, through it, whatever was stored under the BSUID alone (a customer who
hid their number later). tasks/erase.py follows the links. The BSUID, parent BSUID and username
Meta sent are kept on the item (`user_id`, `parent_user_id`, `username`): personal data, erased and
expired with it, never logged.

Each unit is filed under the business of the entry it came in (tasks/meta.py), so a delivery
batching several Pages or WhatsApp Business Accounts keeps each one's apart.

Every write is `standalone` (re-applying it changes nothing), so a delivery larger than one
transaction still commits; see adapters/transactions.py. Each item lives in the partition of the
person it is about (the sender, the status's recipient, the comment's author; domain/senders.py),
so an erasure request finds it with one query and it costs no index entry; a delivery naming
more people than its row holds gets an item per person pointing at it (tasks/privacy.py). Texts are kept through
domain/stored_text.py: a long one deflated, so a 2 KB text's item is one write unit, not two.
"""

from __future__ import annotations

import functools
from collections import Counter
from dataclasses import replace
from typing import Any

from pipeline import schema
from pipeline.domain import senders, stored_text
from pipeline.domain.consumer.work import TaskContext, TaskResult
from pipeline.domain.dependencies.meta_send import CALLBACK_PREFIX
from pipeline.domain.effects import OnConflict, Put, Table, Update, Write
from pipeline.tasks import auto_reply, meta, privacy, replies

STATUS_RANK = {"sent": 1, "delivered": 2, "read": 3, "failed": 4}
"""`failed` outranks the rest: it is final, and no later status follows it."""


def _key(kind: str, tenant: str, item_id: str, person: str | None) -> dict[str, str]:
    """In the person's partition; an item about no one that can be named keeps the key it had
    before the partitions (and is found, if ever, through its id)."""
    if person is None:
        return {schema.PK: f"{LEGACY_PREFIX[kind]}#{tenant}#{item_id}", schema.SK: LEGACY_SORT_KEY[kind]}
    return {schema.PK: senders.person_partition(person), schema.SK: f"{kind}#{tenant}#{item_id}"}


LEGACY_PREFIX = {"msg": "msg", "status": "msg", "comment": "comment"}
LEGACY_SORT_KEY = {"msg": "message", "status": "status", "comment": "triage"}


def message_key(tenant: str, message_id: str, person: str | None) -> dict[str, str]:
    """`person`: the hash of the message's sender."""
    return _key("msg", tenant, message_id, person)


def status_key(tenant: str, message_id: str, person: str | None) -> dict[str, str]:
    """`person`: the hash of the status's recipient."""
    return _key("status", tenant, message_id, person)


def comment_key(tenant: str, comment_id: str, person: str | None) -> dict[str, str]:
    """`person`: the hash of the comment's author; the triage lands on the same item."""
    return _key("comment", tenant, comment_id, person)


def store_message(
    tenant: str, message: meta.InboundMessage, now: float, sender_hash: str | None = None, linked: str | None = None
) -> Put:
    """`sender_hash`: the hash of the customer the message is about (`message.person`); `linked`:
    the hash of their BSUID when `message.person` is their phone number (see the module docstring)."""
    item: dict[str, Any] = {
        **message_key(tenant, message.id, sender_hash),
        "channel": message.channel,
        "sender": message.sender,
        "type": message.type,
        "text": stored_text.stored(message.text),
        "sent_at": message.timestamp,
        "stored_at": now,
        **message.ids.stored(),
    }
    if linked is not None and sender_hash is not None:
        item[schema.SENDER_HASH] = linked
    if message.direction == meta.OUTGOING:  # inbound, the usual case, is left unsaid
        item.update(direction=meta.OUTGOING, recipient=message.recipient)
    return Put(
        table=Table.DATA,
        item=item,
        condition="attribute_not_exists(#pk)",
        names={"#pk": schema.PK},
        on_conflict=OnConflict.SKIP,
        standalone=True,
    )


def apply_status(
    tenant: str, update: meta.StatusUpdate, now: float, sender_hash: str | None = None, linked: str | None = None
) -> Update:
    """`linked`: as store_message's. Each status sets the ids it carries, so an id Meta sends only
    with a delivered or read status (the username) is kept too."""
    names = {
        "#status": "status",
        "#rank": "status_rank",
        "#at": "status_at",
        "#recipient": "recipient",
        "#seen": "applied_at",
    }
    values: dict[str, Any] = {
        ":status": update.status,
        ":rank": STATUS_RANK[update.status],
        ":at": update.timestamp,
        ":recipient": update.recipient,
        ":now": now,
    }
    expression = "SET #status = :status, #rank = :rank, #at = :at, #recipient = :recipient, #seen = :now"
    extra = dict(update.ids.stored())
    if linked is not None and sender_hash is not None:
        extra[schema.SENDER_HASH] = linked
    for n, (name, value) in enumerate(sorted(extra.items())):
        names[f"#id{n}"] = name
        values[f":id{n}"] = value
        expression += f", #id{n} = :id{n}"
    return Update(
        table=Table.DATA,
        key=status_key(tenant, update.message_id, sender_hash),
        expression=expression,
        condition="attribute_not_exists(#rank) OR #rank < :rank",
        names=names,
        values=values,
        on_conflict=OnConflict.SKIP,
        standalone=True,
    )


def store_untriaged(tenant: str, comment: meta.Comment, now: float, sender_hash: str | None = None) -> Put:
    return Put(
        table=Table.DATA,
        item={
            **comment_key(tenant, comment.id, sender_hash),
            "post_id": comment.post_id,
            "author": comment.author,
            "text": stored_text.stored(comment.text),
            "label": "untriaged",
            "stored_at": now,
        },
        condition="attribute_not_exists(#pk)",
        names={"#pk": schema.PK},
        on_conflict=OnConflict.SKIP,
        standalone=True,
    )


def run(ctx: TaskContext) -> TaskResult:
    units = meta.read(ctx.payload)
    delivery_tenant = ctx.envelope.tenant
    # One write per item: a transaction refuses two operations on one item, and a delivery may
    # repeat a message or carry several statuses of one message. The highest status wins here,
    # exactly as it would in the table.
    messages = {(m.tenant, m.id): m for m in units.messages}
    statuses: dict[tuple[str, str], meta.StatusUpdate] = {}
    for update in units.statuses:
        if update.status not in STATUS_RANK:
            units.ignore("status", update.status)  # WhatsApp's `played`, `deleted`, ...
            continue
        held = statuses.get((update.tenant, update.message_id))
        if held is None or STATUS_RANK[update.status] > STATUS_RANK[held.status]:
            statuses[(update.tenant, update.message_id)] = update
    comments = {(c.tenant, c.id): c for c in units.comments}
    # Each unit is filed under its own entry's business (tasks/meta.py), not the delivery's first.
    tenant = functools.partial(meta.tenant_of, delivery_tenant=delivery_tenant)
    writes: list[Write] = [
        store_message(tenant(m), m, ctx.now, ctx.sender_hash(m.person), _linked(ctx, m.ids)) for m in messages.values()
    ]
    writes += [
        apply_status(tenant(s), s, ctx.now, ctx.sender_hash(s.recipient), _linked(ctx, s.ids))
        for s in statuses.values()
    ]
    writes += [store_untriaged(tenant(c), c, ctx.now, ctx.sender_hash(c.author)) for c in comments.values()]
    resolved, failed, refused = _replies(ctx, statuses.values())
    writes += resolved
    holds, turns, started = auto_reply.turn_starts(ctx, messages.values())
    writes += holds
    writes += privacy.delivery_index(ctx)
    return TaskResult(
        writes=tuple(writes),
        follow_ups=tuple(turns),
        detail={
            **({"auto_reply": dict(started)} if started else {}),
            "messages": len(messages),
            "statuses": len(statuses),
            "comments": len(comments),
            "ignored": dict(units.ignored),
            "unprocessable": units.unprocessable,
            "replies_resolved": len(resolved),
            "replies_failed": dict(failed),
            "callbacks_refused": refused,
        },
    )


def _linked(ctx: TaskContext, ids: meta.WhatsAppIds) -> str | None:
    bsuid = ids.linked_bsuid
    return ctx.sender_hash(bsuid) if bsuid else None


def _replies(ctx: TaskContext, statuses: Any) -> tuple[list[Write], Counter[str], int]:
    """What the statuses of replies the ai lane sent do to them (tasks/replies.py): the writes,
    the replies marked failed by Meta's code, and the references refused."""
    resolved: list[Write] = []
    failed: Counter[str] = Counter()
    refused = 0
    for status in statuses:
        if not status.callback.startswith(CALLBACK_PREFIX):
            continue  # no reference, or another tool's: not a reply of ours
        found = ctx.callbacks.verify(status.callback)
        if found is None or not status.business_id or found.business_id != status.business_id:
            refused += 1  # never logged: the reference names a conversation
            continue
        resolution = replies.resolved_by_status(status, found)
        if status.status != "failed":
            resolved.append(replace(resolution, standalone=True))
        elif ctx.write_now(resolution):
            failed[str(status.error_code)] += 1
    return resolved, failed, refused
