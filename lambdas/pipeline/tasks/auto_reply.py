"""messages lane: a tenant's stored inbound messages become ai turns, with no producer in between.

Where the tenant has auto-reply on for the message's channel (settings/auto_reply.py), the
messages lane stamps each inbound message it stores into its conversation as the ai lane's
`ai.inbound` would (tasks/ai.py `stamped`: the turn marker moved to the newest message, the message
stored for the prompt, added to the unanswered set), in the same commit as the message itself, and
schedules the newest message's `ai.turn` on the ai lane one debounce out (the ai lane's
`debounce_seconds` task option, carried in the settings). Conversation = the customer; `reply_to`
= the channel, the asset the customer wrote to (WhatsApp's `metadata.phone_number_id`, the Page or
Instagram account of the entry) and the customer. The turn answers every unanswered message of the
conversation, sent at most once (tasks/replies.py).

Why here and not on the ai lane (a product's `ai.inbound` job is still stamped there): a burst's
messages are stamped as the messages lane stores them, not after they have waited in the ai
lane's queue behind the turns holding its model budget, where a busy lane could stamp two texts of
a burst further apart than the debounce; and a message costs the ai lane no work of its own, only
its turn (an SQS send and receive, a done-marker and a transaction fewer a message).

- The tenant is the one owning the entry's asset, and the asset written to must be that
  tenant's too (settings/tenant_assets.py); otherwise nothing is started (`auto_reply.unbound`).
  Nor is it for a customer a reply could not be addressed to (`auto_reply.malformed`,
  domain/reply_to.py): the ai lane would refuse it for good, into its dead-letter queue.
- A message already stamped (its stored item there: one consistent read) starts nothing
  (`already_started`): a second delivery of it (Meta retries) must not put it back among the
  unanswered once a reply has answered it. Two copies at once both stamp, the same writes, and
  schedule the same turn (its id derives from the tenant, the customer and Meta's message id):
  one turn, one reply.
- Several messages of one conversation in one delivery are one stamp and one turn (a transaction
  takes one write per item). A message whose time is more than five minutes ahead of ours is
  stamped at ours (`clock_ahead`): by its own, it would outrank the conversation's later messages.
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

from pipeline.domain import epoch
from pipeline.domain.consumer.work import FollowUp, TaskContext
from pipeline.domain.effects import Table, Write
from pipeline.domain.reply_to import ReplyTo, ReplyToRefused
from pipeline.settings.auto_reply import ANSWER
from pipeline.tasks import ai, meta, reply_holds

AI_LANE = "ai"


def turn_starts(
    ctx: TaskContext, messages: Iterable[meta.InboundMessage]
) -> tuple[list[Write], list[FollowUp], Counter[str]]:
    """The writes (holds, and the stamps of the messages that start turns), the turns to schedule
    on the ai lane, and a count of what each message got."""
    writes: list[Write] = []
    counts: Counter[str] = Counter()
    if not ctx.auto_reply.on_anywhere:
        return writes, [], counts
    conversations: dict[tuple[str, str], list[ai.Inbound]] = {}
    for message in messages:
        found = _replying(ctx, message, counts)
        if found is None:
            continue
        tenant, config = found
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
        elif (reply_to := _reply_to(message.channel, message.business_id, customer)) is None:
            counts["malformed"] += 1
        elif ctx.read(Table.DATA, ai.stored_key(tenant, customer, message.id)) is not None:
            # Stamped by an earlier delivery of it, whose turn may have answered it already:
            # stamped again, it would be back among the unanswered, answered a second time.
            counts["already_started"] += 1
        else:
            conversations.setdefault((tenant, customer), []).append(_inbound(ctx, customer, message, reply_to, counts))
            counts["started"] += 1
    turns: list[FollowUp] = []
    for (tenant, _), inbounds in conversations.items():
        stamps, turn = ai.stamped(
            ctx, tenant, inbounds, lane=AI_LANE, debounce_seconds=ctx.auto_reply.debounce_seconds, deadline=None
        )
        writes += stamps
        turns.append(turn)
    return writes, turns, counts


def _replying(ctx: TaskContext, message: meta.InboundMessage, counts: Counter[str]) -> tuple[str, Any] | None:
    """The auto-replying tenant the message is for and its channel's settings, or None (counted)."""
    tenant = ctx.owner_of(meta.tenant_of(message, ctx.envelope.tenant))
    if tenant is None or ctx.auto_reply.tenants.get(tenant) is None:
        return None  # an entry no auto-replying tenant owns: stored, nothing more
    config = ctx.auto_reply.for_channel(tenant, message.channel)
    if config is None:
        counts["off"] += 1
        return None
    if not message.business_id or ctx.owner_of(message.business_id) != tenant:
        counts["unbound"] += 1
        return None
    return tenant, config


def _reply_to(channel: str, business_id: str, customer: str) -> dict[str, Any] | None:
    """Where a reply to the customer goes, as the Send APIs take it; None when none could be
    addressed to them (the ai lane would refuse such a turn for good, into its dead-letter queue)."""
    try:
        return ReplyTo.parse({"channel": channel, "business_id": business_id, "recipient": customer}).plain()
    except ReplyToRefused:
        return None


def _inbound(
    ctx: TaskContext, customer: str, message: meta.InboundMessage, reply_to: dict[str, Any], counts: Counter[str]
) -> ai.Inbound:
    text = message.text if message.type == "text" else f"[{message.type}] {message.text}".strip()
    at = epoch.seconds(message.timestamp) or ctx.now
    if epoch.too_far_ahead(at, ctx.now):
        # Ordered by that time, the message would outrank every later one of the conversation.
        counts["clock_ahead"] += 1
        at = ctx.now
    return ai.Inbound(
        conversation=customer,
        message_id=message.id,
        text=text,
        seq=at,
        sender=customer,
        reply_to=reply_to,
        auto=True,
    )
