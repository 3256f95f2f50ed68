"""messages lane: a tenant's stored inbound messages become ai turns, with no producer in between.

Where the tenant has auto-reply on for the message's channel (settings/auto_reply.py), each
inbound message the messages lane stores is handed to the ai lane as the same `ai.inbound` a
product would post (tasks/ai.py): conversation = the customer, `reply_to` = the channel, the asset
the customer wrote to (WhatsApp's `metadata.phone_number_id`, the Page or Instagram account of the
entry) and the customer. The ai lane stamps the conversation and answers it one debounce
(`debounce_seconds`, its task option) after the newest message, so a burst gets one reply, sent at
most once (tasks/replies.py); its binding check (`reply_asset_not_bound`) still applies.

- The tenant is the one owning the entry's asset, and the asset written to must be that
  tenant's too (settings/tenant_assets.py); otherwise nothing is started (`auto_reply.unbound`).
  Nor is it for a customer a reply could not be addressed to (`auto_reply.malformed`,
  domain/reply_to.py): the ai lane would refuse it for good, into its dead-letter queue.
- The turn's envelope id derives from the tenant, the customer and Meta's message id, so a second
  delivery of the same message (Meta retries) is a duplicate the ai lane's done-marker absorbs:
  one turn, one reply.
- A message that is not text starts a turn only where the tenant's `media` is `answer`, its
  prompt being its type and caption (`[image] the red one?`); otherwise it is left to people.
- A text that is an opt-out keyword starts no turn and holds the conversation (`opted_out`).
- An echo (a message the business sent the customer) starts no turn; unless it is one of our own
  replies (the Send API's `metadata` we send, meta.InboundMessage.ours, or an `app_id` among the
  settings' `own_app_ids`) it pauses the conversation for `echo_pause_seconds`
  (tasks/reply_holds.py). WhatsApp's Cloud API sends no echo of what it sent, so on WhatsApp
  every echo (`smb_message_echoes`) is a person's.

The turn itself checks the holds, the customer service window and the channel's length limit
(tasks/ai.py).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from typing import Any

from pipeline.domain.consumer.work import FollowUp, TaskContext
from pipeline.domain.effects import Write
from pipeline.domain.envelope import Envelope
from pipeline.domain.reply_to import ReplyTo, ReplyToRefused
from pipeline.settings.auto_reply import ANSWER
from pipeline.tasks import ai, meta, reply_holds
from pipeline.tasks.conversations import conversation_ref

AI_LANE = "ai"


def turn_starts(
    ctx: TaskContext, messages: Iterable[meta.InboundMessage]
) -> tuple[list[Write], list[FollowUp], Counter[str]]:
    """The holds to write, the `ai.inbound`s to send, and a count of what each message got."""
    writes: list[Write] = []
    starts: list[FollowUp] = []
    counts: Counter[str] = Counter()
    if not ctx.auto_reply.on_anywhere:
        return writes, starts, counts
    for message in messages:
        entry = meta.tenant_of(message, ctx.envelope.tenant)
        tenant = ctx.owner_of(entry)
        if tenant is None or ctx.auto_reply.tenants.get(tenant) is None:
            continue  # an entry no auto-replying tenant owns: stored, nothing more
        config = ctx.auto_reply.for_channel(tenant, message.channel)
        if config is None:
            counts["off"] += 1
            continue
        if not message.business_id or ctx.owner_of(message.business_id) != tenant:
            counts["unbound"] += 1
            continue
        customer = message.person
        if not customer:
            counts["no_customer"] += 1
        elif message.direction == meta.OUTGOING:
            if not (message.ours or ctx.auto_reply.ours(message.app_id)):
                writes.append(reply_holds.pause(ctx, tenant, customer, ctx.now + ctx.auto_reply.echo_pause_seconds))
                counts["paused"] += 1
        elif message.type == "text" and ctx.auto_reply.opts_out(message.text):
            writes.append(reply_holds.opt_out(ctx, tenant, customer))
            counts["opted_out"] += 1
        elif message.type != "text" and config.media != ANSWER:
            counts["left"] += 1
        elif not _addressable(message.channel, message.business_id, customer):
            counts["malformed"] += 1
        else:
            starts.append(FollowUp(_inbound(ctx, tenant, customer, message)))
            counts["started"] += 1
    return writes, starts, counts


def _addressable(channel: str, business_id: str, customer: str) -> bool:
    """Whether a reply could be addressed to the customer as the Send APIs take it: a turn whose
    `reply_to` the ai lane would refuse for good would only end in its dead-letter queue."""
    try:
        ReplyTo.parse({"channel": channel, "business_id": business_id, "recipient": customer})
    except ReplyToRefused:
        return False
    return True


def _inbound(ctx: TaskContext, tenant: str, customer: str, message: meta.InboundMessage) -> Envelope:
    text = message.text if message.type == "text" else f"[{message.type}] {message.text}".strip()
    payload: dict[str, Any] = {
        "conversation": customer,
        "message_id": message.id,
        "text": text,
        "reply_to": {"channel": message.channel, "business_id": message.business_id, "recipient": customer},
        "auto": True,
    }
    if message.timestamp:
        payload["sent_at"] = message.timestamp
    return Envelope(
        id=f"auto-{conversation_ref(tenant, customer)}-{message.id}",
        lane=AI_LANE,
        tenant=tenant,
        kind=ai.INBOUND,
        source="internal",
        created_at=ctx.now,
        payload=payload,
    )
