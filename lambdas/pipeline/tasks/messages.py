"""messages lane: store inbound messages once, and apply delivery statuses in order.

- An inbound message is stored under its Meta id (`wamid` on WhatsApp, `mid` on Messenger and
  Instagram), created only if absent: the same message in a second delivery (Meta retries with
  different batching, so a different log row) is skipped, not duplicated or overwritten.
- A status update (sent → delivered → read, or failed) moves the message's status item forward
  only: the write is conditional on the stored rank being lower. Meta does not promise order, so
  a `delivered` arriving after `read` fails its condition, and that write alone is skipped; the
  rest of the delivery commits.
- Comments in a delivery that also carried messages land here (the door never lets a message
  wait behind a comment flood) and are stored for triage, untriaged.

Every write is `standalone` (re-applying it changes nothing), so a delivery larger than one
transaction still commits; see adapters/transactions.py. Each item carries the hash of the person
it is about (the sender, the status's recipient, the comment's author), and a delivery naming
several people gets their index items (tasks/privacy.py), so an erasure request finds them all.
"""

from __future__ import annotations

from typing import Any

from pipeline import schema
from pipeline.domain.effects import OnConflict, Put, Table, Update, Write
from pipeline.domain.work import TaskContext, TaskResult
from pipeline.tasks import meta, privacy

STATUS_RANK = {"sent": 1, "delivered": 2, "read": 3, "failed": 4}
"""`failed` outranks the rest: it is final, and no later status follows it."""


def message_key(tenant: str, message_id: str) -> dict[str, str]:
    return {schema.PK: f"msg#{tenant}#{message_id}", schema.SK: "message"}


def status_key(tenant: str, message_id: str) -> dict[str, str]:
    return {schema.PK: f"msg#{tenant}#{message_id}", schema.SK: "status"}


def comment_key(tenant: str, comment_id: str) -> dict[str, str]:
    return {schema.PK: f"comment#{tenant}#{comment_id}", schema.SK: "triage"}


def _about(item: dict[str, Any], sender_hash: str | None) -> dict[str, Any]:
    return item if sender_hash is None else {**item, schema.SENDER_HASH: sender_hash}


def store_message(tenant: str, message: meta.InboundMessage, now: float, sender_hash: str | None = None) -> Put:
    return Put(
        table=Table.DATA,
        item=_about(
            {
                **message_key(tenant, message.id),
                "channel": message.channel,
                "sender": message.sender,
                "type": message.type,
                "text": message.text,
                "sent_at": message.timestamp,
                "stored_at": now,
            },
            sender_hash,
        ),
        condition="attribute_not_exists(#pk)",
        names={"#pk": schema.PK},
        on_conflict=OnConflict.SKIP,
        standalone=True,
    )


def apply_status(tenant: str, update: meta.StatusUpdate, now: float, sender_hash: str | None = None) -> Update:
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
    if sender_hash is not None:
        names["#sender"] = schema.SENDER_HASH
        values[":sender"] = sender_hash
        expression += ", #sender = :sender"
    return Update(
        table=Table.DATA,
        key=status_key(tenant, update.message_id),
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
        item=_about(
            {
                **comment_key(tenant, comment.id),
                "post_id": comment.post_id,
                "author": comment.author,
                "text": comment.text,
                "label": "untriaged",
                "stored_at": now,
            },
            sender_hash,
        ),
        condition="attribute_not_exists(#pk)",
        names={"#pk": schema.PK},
        on_conflict=OnConflict.SKIP,
        standalone=True,
    )


def run(ctx: TaskContext) -> TaskResult:
    units = meta.read(ctx.payload)
    tenant = ctx.envelope.tenant
    # One write per item: a transaction refuses two operations on one item, and a delivery may
    # repeat a message or carry several statuses of one message. The highest status wins here,
    # exactly as it would in the table.
    messages = {m.id: m for m in units.messages}
    statuses: dict[str, meta.StatusUpdate] = {}
    unknown_statuses = 0
    for update in units.statuses:
        if update.status not in STATUS_RANK:
            unknown_statuses += 1
            continue
        held = statuses.get(update.message_id)
        if held is None or STATUS_RANK[update.status] > STATUS_RANK[held.status]:
            statuses[update.message_id] = update
    comments = {c.id: c for c in units.comments}
    writes: list[Write] = [store_message(tenant, m, ctx.now, ctx.sender_hash(m.sender)) for m in messages.values()]
    writes += [apply_status(tenant, s, ctx.now, ctx.sender_hash(s.recipient)) for s in statuses.values()]
    writes += [store_untriaged(tenant, c, ctx.now, ctx.sender_hash(c.author)) for c in comments.values()]
    writes += privacy.delivery_index(ctx)
    return TaskResult(
        writes=tuple(writes),
        detail={
            "messages": len(messages),
            "statuses": len(statuses),
            "comments": len(comments),
            "ignored": units.ignored + unknown_statuses,
        },
    )
