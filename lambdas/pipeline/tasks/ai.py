"""ai lane: reply turns, coalesced so a burst of messages gets one reply.

People send "hi", "is the shop open", "on Sunday" seconds apart; three messages should not mean
three model calls and three replies. Two kinds of work on this lane do it:

- `ai.inbound` (a job the product posts for each customer message; payload `conversation`,
  `message_id`, `text`, optional `sent_at` in epoch seconds or milliseconds, told apart by size
  (domain/epoch.py); a `sent_at` more than five minutes ahead of our clock is refused as
  `sent_at_in_future`, a permanent error, since the marker would otherwise outrank every later
  message of the conversation for two days): stamps the conversation's turn marker with this
  message as the newest, stores the message, and schedules an `ai.turn` `debounce_seconds` out
  (a follow-up on this lane). The marker only ever moves forward, ordered by (sent_at,
  message_id), so an older message processed late neither takes the marker back nor is lost:
  its turn finds a newer marker and the newer turn answers both, or, when the newer turn has
  answered without it, answers it itself (tasks/late_turns.py). Meta's times are whole seconds,
  so two messages of one second order by id, not by arrival: one stamped after a reply to the
  other, with a smaller id, is such a late message.
- `ai.turn` (internal): reads the marker. Newer than this turn's message → superseded, a cheap
  no-op, unless the newer turn has answered (or is answering) without this message
  (tasks/late_turns.py). Older → the stamp has not landed yet (the follow-up is sent before the stamp commits,
  so that a crash repeats the turn rather than loses it) → transient, retried shortly. Equal →
  this is the newest message: claim it (one copy of a turn calls the model: tasks/turn_claims.py),
  call the model, holding a slot of the shared `llm` budget, then
  commit the reply together with a check that the marker is still ours (noting on it that its
  message is `answered`). A message that arrived
  during the call fails that check, and the reply is dropped in favour of the newer turn.

The newest turn answers every message since the last reply, not only its own: the stamp also adds
the message to the conversation's `unanswered` item (a string set of `<seq>#<message id>`, added
to unconditionally, so a message processed late is in it too), and the turn prompts the model
with those messages' texts, oldest first, then takes what it answered out of the set in the
reply's commit. A superseded turn commits nothing, so the set keeps its messages for the newer
turn. A conversation stamped before the set existed is answered from the marker's text.

A message whose payload names where replies go (`reply_to`: `channel` whatsapp, messenger or
instagram, `business_id`, `recipient`) has its turn's reply sent to the customer through Meta,
at most once, by `reply.send` (tasks/replies.py); without it the reply is only stored. A
`reply_to` whose ids are not Meta's shapes (`reply_to_malformed`), or whose `business_id` is not
one of the job's tenant's own assets (`reply_asset_not_bound`, settings/tenant_assets.py), fails
the message for good before anything is stored.

Before its model call a turn may be settled as a no-op, its line's `settled` saying why, and its
messages taken out of the unanswered set: `outside_service_window` when it sends through Meta and
its newest message is more than 24 h old (Meta's customer service window: nothing is called or
sent), and, for a turn auto-reply started (`auto`, tasks/auto_reply.py), `auto_reply_off`,
`opted_out` or `echo_pause` (tasks/reply_holds.py). A reply that is sent is first cut to its
channel's limit (domain/reply_length.py states the rule), so Meta never refuses it for length.

The turn's id derives from the message (`turn-<conversation ref>-<message id>`), so a repeated
follow-up is a duplicate the consumer's done-marker absorbs.

The stored message and the reply carry the hash of the person the conversation is with (the
payload's `sender`, or the conversation id itself, which is usually their phone number or account
id), so an erasure request finds them; the turn carries that hash, never the id, to its reply.

A conversation id names a person's thread (often their phone number or account id), so it never
reaches a log: the turn's id, the outcome's detail and error messages (all logged by the consumer)
carry `conversation_ref`, a digest of tenant and conversation. Someone who knows the conversation
can compute its ref and find its log lines; the logs alone do not give the id back.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pipeline import schema
from pipeline.domain import epoch, reply_length, senders, stored_text
from pipeline.domain.consumer.work import FollowUp, TaskContext, TaskResult
from pipeline.domain.dependencies import meta_send
from pipeline.domain.effects import OnConflict, Put, Table, Update, Write
from pipeline.domain.envelope import Envelope
from pipeline.domain.errors import PermanentError, TransientError
from pipeline.tasks import late_turns, privacy, replies, reply_holds, turn_claims
from pipeline.tasks.conversations import (
    conversation_pk,
    conversation_ref,
    marker_key,
)

INBOUND = "ai.inbound"
TURN = "ai.turn"
MARKER_TTL_SECONDS = 2 * 24 * 3600
"""Outlives any turn: the lane's default expiry drops a turn long before its marker goes."""
PROMPT_TEXT_LIMIT = 4000
"""Characters of the prompt: the newest messages' texts, so a long burst keeps its end."""
PROMPT_MESSAGES = 20
"""The most messages a turn reads for its prompt (one GetItem each), newest first: more than a
burst, and a bound on a turn's reads after a long outage of the model."""
UNANSWERED_SK = "unanswered"
SERVICE_WINDOW_SECONDS = 24 * 3600
"""Meta's customer service window: a free-form reply only within 24 h of the customer's last
message (WhatsApp; Messenger's and Instagram's standard messaging window is the same 24 h)."""
OUTSIDE_SERVICE_WINDOW = "outside_service_window"
_SEQ_WIDTH = 20


class TurnBeforeStamp(TransientError):
    reason = "turn_before_stamp"


def turn_id(tenant: str, conversation: str, message_id: str) -> str:
    return f"turn-{conversation_ref(tenant, conversation)}-{message_id}"


def stored_key(tenant: str, conversation: str, message_id: str) -> dict[str, str]:
    """The data item a stamp stores a message of the conversation under (`in#<message id>`)."""
    return {schema.PK: conversation_pk(tenant, conversation), schema.SK: f"in#{message_id}"}


def unanswered_key(tenant: str, conversation: str) -> dict[str, str]:
    """The data item listing the conversation's messages no reply has answered yet."""
    return {schema.PK: conversation_pk(tenant, conversation), schema.SK: UNANSWERED_SK}


def unanswered_entry(seq: float, message_id: str) -> str:
    """One message in the unanswered set; entries sort as (seq, message id) do."""
    return f"{max(0.0, seq):0{_SEQ_WIDTH}.6f}#{message_id}"


def _message_of(entry: str) -> str:
    return entry.split("#", 1)[1]


def _field(payload: Mapping[str, Any], name: str) -> str:
    value = payload.get(name)
    if not isinstance(value, str | int) or isinstance(value, bool) or str(value) == "":
        raise PermanentError("bad_ai_payload", f"{name} is required")
    return str(value)


def _payload(ctx: TaskContext) -> Mapping[str, Any]:
    if not isinstance(ctx.payload, Mapping):
        raise PermanentError("bad_ai_payload", "payload must be an object")
    return ctx.payload


def _sent_at(payload: Mapping[str, Any], ctx: TaskContext) -> float:
    """The message's time in epoch seconds, whichever unit it came in; the job's creation when it
    has none. A time ahead of ours by more than clock skew is refused: as the marker's order it
    would outrank every later message of the conversation until the marker expires."""
    raw = payload.get("sent_at")
    if not raw:
        return ctx.envelope.created_at
    at = epoch.seconds(raw)
    if at is None:
        raise PermanentError("bad_ai_payload", "sent_at must be epoch seconds or milliseconds")
    if epoch.too_far_ahead(at, ctx.now):
        ahead, slack = at - ctx.now, epoch.FUTURE_SLACK_SECONDS
        raise PermanentError("sent_at_in_future", f"sent_at is {ahead:.0f} s ahead of now (at most {slack:.0f})")
    return at


@dataclass(frozen=True)
class Inbound:
    """One customer message as a turn stamps it: checked, from a job's payload or the messages lane."""

    conversation: str
    message_id: str
    text: str
    seq: float
    """The message's time in epoch seconds: the marker's order."""
    sender: str
    """The person the conversation is with (their hash goes on what is stored)."""
    reply_to: Mapping[str, Any] | None = None
    """Where the reply goes (a checked, bound `reply_to`), or None: only stored."""
    auto: bool = False


def stamp(ctx: TaskContext) -> TaskResult:
    payload = _payload(ctx)
    conversation = _field(payload, "conversation")
    inbound = Inbound(
        conversation=conversation,
        message_id=_field(payload, "message_id"),
        text=str(payload.get("text") or ""),
        seq=_sent_at(payload, ctx),
        sender=str(payload.get("sender") or conversation),
        reply_to=_reply_to(ctx, payload).get("reply_to"),
        auto=payload.get("auto") is True,
    )
    writes, turn = stamped(
        ctx,
        ctx.envelope.tenant,
        [inbound],
        lane=ctx.lane,
        debounce_seconds=float(ctx.option("debounce_seconds", "4")),
        deadline=ctx.envelope.deadline,
    )
    return TaskResult(
        writes=tuple(writes),
        follow_ups=(turn,),
        detail={"conversation": conversation_ref(ctx.envelope.tenant, conversation)},
    )


def stamped(
    ctx: TaskContext,
    tenant: str,
    inbounds: Sequence[Inbound],
    *,
    lane: str,
    debounce_seconds: float,
    deadline: float | None,
) -> tuple[list[Write], FollowUp]:
    """The writes that stamp messages of one conversation, and the turn of the newest of them,
    `debounce_seconds` out on `lane`: the marker moved to the newest (never back), each message
    stored, all of them added to the unanswered set. One write per item, so that several messages
    of one conversation in one delivery fit one transaction (which refuses two writes to an item)."""
    newest = max(inbounds, key=lambda inbound: (inbound.seq, inbound.message_id))
    conversation = newest.conversation
    marker = Update(
        table=Table.STATE,
        key=marker_key(tenant, conversation),
        expression="SET #token = :token, #seq = :seq, #text = :text, #ttl = :ttl",
        condition="attribute_not_exists(#seq) OR #seq < :seq OR (#seq = :seq AND #token <= :token)",
        names={"#token": "token", "#seq": "seq", "#text": "text", "#ttl": schema.TTL},
        values={
            ":token": newest.message_id,
            ":seq": newest.seq,
            ":text": newest.text[:PROMPT_TEXT_LIMIT],
            ":ttl": int(ctx.now) + MARKER_TTL_SECONDS,
        },
        on_conflict=OnConflict.SKIP,  # a newer message holds the marker: leave it there
    )
    writes: list[Write] = [marker]
    for inbound in inbounds:
        item = {
            **stored_key(tenant, conversation, inbound.message_id),
            "text": inbound.text,
            "sent_at": inbound.seq,
            "stored_at": ctx.now,
        }
        writes.append(
            Put(
                table=Table.DATA,
                item=privacy.about(ctx, inbound.sender, item),
                condition="attribute_not_exists(#pk)",
                names={"#pk": schema.PK},
                on_conflict=OnConflict.SKIP,
            )
        )
    sender = ctx.sender_hash(newest.sender)
    names = {"#waiting": "waiting"}
    values: dict[str, Any] = {":entry": {unanswered_entry(i.seq, i.message_id) for i in inbounds}}
    expression = "ADD #waiting :entry"
    if sender is not None:
        names["#sender"] = schema.SENDER_HASH
        values[":sender"] = sender
        expression += " SET #sender = :sender"
    writes.append(
        Update(
            table=Table.DATA,
            key=unanswered_key(tenant, conversation),
            expression=expression,
            names=names,
            values=values,
        )
    )
    turn = Envelope(
        id=turn_id(tenant, conversation, newest.message_id),
        lane=lane,
        tenant=tenant,
        kind=TURN,
        source="internal",
        created_at=ctx.now,
        deadline=deadline,
        payload={
            "conversation": conversation,
            "token": newest.message_id,
            "seq": newest.seq,
            "sender_hash": sender,
            **({"reply_to": dict(newest.reply_to)} if newest.reply_to is not None else {}),
            **({"auto": True} if newest.auto else {}),
        },
    )
    return writes, FollowUp(turn, delay_seconds=math.ceil(debounce_seconds))


def _reply_to(ctx: TaskContext, payload: Mapping[str, Any]) -> dict[str, Any]:
    """Where the reply goes, if anywhere: refused for good (`reply_to_malformed`,
    `reply_asset_not_bound`) before the message is stored, when it could never be sent."""
    raw = payload.get("reply_to")
    if raw is None:
        return {}
    return {"reply_to": ctx.bound(meta_send.ReplyTo.parse(raw)).plain()}


def turn(ctx: TaskContext) -> TaskResult:
    payload = _payload(ctx)
    conversation, token = _field(payload, "conversation"), _field(payload, "token")
    seq = float(payload.get("seq") or 0)
    tenant = ctx.envelope.tenant
    ref = conversation_ref(tenant, conversation)
    marker = ctx.read(Table.STATE, marker_key(tenant, conversation))
    if marker is None:
        raise TurnBeforeStamp(f"no marker yet for conversation {ref}")
    theirs = (float(marker.get("seq", 0)), str(marker.get("token", "")))
    if theirs < (seq, token):
        raise TurnBeforeStamp(f"marker for conversation {ref} predates message {token}")
    if theirs > (seq, token) and not _left_behind(ctx, tenant, conversation, marker, unanswered_entry(seq, token)):
        return TaskResult(superseded=True, detail={"conversation": ref, "superseded_by": theirs[1]})
    sending = _reply_to(ctx, payload)
    last_heard = max(seq, theirs[0])  # a late message's window runs from the customer's last one
    settled = _settled(ctx, tenant, conversation, last_heard, sending, auto=payload.get("auto") is True)
    if settled is not None:
        return _settle(ctx, tenant, conversation, unanswered_entry(seq, token), settled, theirs[1])
    # Claimed before the unanswered messages are read: a late message's turn that finds this claim
    # knows this turn may have read them before the late one was stamped (tasks/late_turns.py).
    mine = turn_claims.claim(ctx, tenant, conversation, token, marker_token=theirs[1])
    answered, prompt = _unanswered(ctx, tenant, conversation, unanswered_entry(seq, token))
    try:
        with ctx.dependency():
            reply = ctx.vendor.complete(prompt or str(marker.get("text", "")), timeout=ctx.remaining())
    except Exception:
        with contextlib.suppress(Exception):  # a claim not given back expires on its own
            turn_claims.give_back(ctx, tenant, conversation, mine)
        raise
    if sending:
        reply = reply_length.fit(reply, sending["reply_to"]["channel"])
    reply_item = {
        schema.PK: conversation_pk(tenant, conversation),
        schema.SK: f"reply#{token}",
        "text": reply,
        "answers": token,
        "answered_at": ctx.now,
    }
    if senders.is_hash(payload.get("sender_hash")):
        reply_item[schema.SENDER_HASH] = payload["sender_hash"]
    if sending:
        reply_item["send_state"] = meta_send.PENDING
    answer = Put(
        table=Table.DATA,
        item=reply_item,
        condition="attribute_not_exists(#pk)",
        names={"#pk": schema.PK},
        on_conflict=OnConflict.SKIP,
    )
    writes: tuple[Put | Update, ...] = (answer, _still_newest(tenant, conversation, theirs[1], claim=mine))
    if answered:
        writes += (
            Update(
                table=Table.DATA,
                key=unanswered_key(tenant, conversation),
                expression="DELETE #waiting :answered",
                names={"#waiting": "waiting"},
                values={":answered": set(answered)},
            ),
        )
    follow_ups: tuple[FollowUp, ...] = ()
    if sending:
        send = replies.send_envelope(
            ctx.envelope, ctx.envelope.id, {"conversation": conversation, "token": token, **sending}
        )
        follow_ups = (FollowUp(send),)
    return TaskResult(writes=writes, follow_ups=follow_ups, detail={"conversation": ref, "answered": len(answered)})


def _settled(
    ctx: TaskContext, tenant: str, conversation: str, seq: float, sending: Mapping[str, Any], *, auto: bool
) -> str | None:
    """Why this turn must not answer at all, or None: a hold on an auto-reply conversation
    (tasks/reply_holds.py), or, for a reply sent through Meta, a newest message older than the
    customer service window (Meta refuses a free-form message after it)."""
    if auto:
        held = reply_holds.held(ctx, tenant, conversation)
        if held is not None:
            return held
    if sending and ctx.now - seq > SERVICE_WINDOW_SECONDS:
        return OUTSIDE_SERVICE_WINDOW
    return None


def _settle(
    ctx: TaskContext, tenant: str, conversation: str, newest: str, reason: str, marker_token: str
) -> TaskResult:
    """The turn settled without a model call or a send: its messages leave the unanswered set, so
    the next reply does not answer what was left to people or to the window."""
    entries = _entries(ctx, tenant, conversation, newest)
    writes: tuple[Update, ...] = (_still_newest(tenant, conversation, marker_token),)
    if entries:
        writes += (
            Update(
                table=Table.DATA,
                key=unanswered_key(tenant, conversation),
                expression="DELETE #waiting :answered",
                names={"#waiting": "waiting"},
                values={":answered": set(entries)},
            ),
        )
    return TaskResult(writes=writes, detail={"conversation": conversation_ref(tenant, conversation), "settled": reason})


def _still_newest(tenant: str, conversation: str, marker_token: str, *, claim: str | None = None) -> Update:
    """The commit's guard that no newer message was stamped meanwhile and, for a turn that called
    the model, that its claim is still its own (a newer turn, a late one, or a copy that found the
    claim expired may have taken it over, and answers instead): else the reply is dropped. It notes
    on the marker that its message's turn has answered."""
    names = {"#token": "token", "#answered": late_turns.ANSWERED}
    values = {":token": marker_token}
    condition = "#token = :token"
    if claim is not None:
        names["#claim"] = late_turns.CLAIM
        values[":claim"] = claim
        condition += " AND #claim = :claim"
    return Update(
        table=Table.STATE,
        key=marker_key(tenant, conversation),
        expression="SET #answered = :token",
        condition=condition,
        names=names,
        values=values,
        on_conflict=OnConflict.SUPERSEDE,
    )


def _left_behind(ctx: TaskContext, tenant: str, conversation: str, marker: Mapping[str, Any], mine: str) -> bool:
    """Whether this turn, older than the marker, must answer its message itself (tasks/late_turns.py)."""
    if not late_turns.needs_a_look(marker, ctx.now):
        return False
    return late_turns.left_behind(marker, _waiting(ctx, tenant, conversation), mine, ctx.now)


def _waiting(ctx: TaskContext, tenant: str, conversation: str) -> list[str]:
    """The unanswered set's entries, in the messages' order."""
    item = ctx.read(Table.DATA, unanswered_key(tenant, conversation)) or {}
    return sorted(entry for entry in item.get("waiting") or () if isinstance(entry, str))


def _entries(ctx: TaskContext, tenant: str, conversation: str, newest: str) -> list[str]:
    return [entry for entry in _waiting(ctx, tenant, conversation) if entry <= newest]


def _unanswered(ctx: TaskContext, tenant: str, conversation: str, newest: str) -> tuple[list[str], str]:
    """The unanswered set's entries up to `newest`, and the prompt made of their texts, oldest
    first (empty when the conversation has no set yet)."""
    entries = _entries(ctx, tenant, conversation, newest)
    texts = []
    for entry in entries[-PROMPT_MESSAGES:]:
        message = ctx.read(Table.DATA, stored_key(tenant, conversation, _message_of(entry)))
        if message is not None:  # erased since, or never stored: nothing to answer
            texts.append(stored_text.read(message.get("text", "")))
    return entries, "\n".join(texts)[-PROMPT_TEXT_LIMIT:]


def run(ctx: TaskContext) -> TaskResult:
    if ctx.envelope.kind == INBOUND:
        return stamp(ctx)
    if ctx.envelope.kind == TURN:
        return turn(ctx)
    if ctx.envelope.kind == replies.SEND:
        return replies.send(ctx)
    if ctx.envelope.kind == replies.RESOLVE:
        return replies.resolve(ctx)
    raise PermanentError("unknown_kind", f"the ai lane does {INBOUND} and {TURN}, not {ctx.envelope.kind}")
