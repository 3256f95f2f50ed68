"""ai lane: sending a turn's reply to the customer through Meta, at most once.

The turn stores its reply with `send_state` `pending` and puts a `reply.send` on the lane
(tasks/ai.py). Sending (states in domain/dependencies/meta_send.py):

1. The reply is read. None yet: the turn's commit has not landed (retried shortly), or a newer
   message superseded the turn (nothing to send). Already `sent` or `unanswered`: done.
2. `calling` or `unknown`: an earlier attempt's outcome is not known. It is never repeated:
   the reply waits for Meta's status to resolve it (`reply.resolve`).
3. Otherwise the attempt is recorded first (`calling`, the attempt's number, with a conditional
   write that only one copy of this work can make), then the reply is sent with a reference to
   that attempt (WhatsApp's `biz_opaque_callback_data`):
   - accepted: `sent`, with what was sent and Meta's message id;
   - refused (a rate limit, a 5xx, the token, no connection): nothing was sent, so the attempt is
     handed back (`retry`) and the record retried with the lane's backoff;
   - rejected for good (outside the service window, undeliverable): `unanswered`, with the reason;
   - no answer: `unknown`, and `reply.resolve` waits for Meta's status.
4. `reply.resolve` looks again every `resolve_seconds`, `resolve_rounds` times: a status that
   carried the attempt's reference (tasks/messages.py) made it `sent`; after the last round it is
   `unanswered` (reason `outcome_unknown`), counted in `RepliesUnanswered` and alarmed, not resent.

The record's line says what became of the reply (`detail.reply`), never its text or its recipient.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from pipeline import schema
from pipeline.domain.consumer.work import FollowUp, TaskContext, TaskResult
from pipeline.domain.dependencies import meta_send as ms
from pipeline.domain.effects import OnConflict, Table, Update
from pipeline.domain.envelope import Envelope
from pipeline.domain.errors import PermanentError, TransientError
from pipeline.tasks.conversations import conversation_pk, conversation_ref, marker_key

SEND = "reply.send"
RESOLVE = "reply.resolve"


class ReplyNotStored(TransientError):
    reason = "reply_not_stored"


class AttemptTaken(TransientError):
    """Another copy of this work recorded an attempt first: read again next time."""

    reason = "reply_attempt_taken"


def reply_key(conversation_pk: str, token: str) -> dict[str, str]:
    return {schema.PK: conversation_pk, schema.SK: f"reply#{token}"}


def send_envelope(base: Envelope, turn_id: str, payload: Mapping[str, Any]) -> Envelope:
    return Envelope(
        id=f"send-{turn_id}",
        lane=base.lane,
        tenant=base.tenant,
        kind=SEND,
        source="internal",
        created_at=base.created_at,
        deadline=base.deadline,
        payload=dict(payload),
    )


def _payload(ctx: TaskContext) -> tuple[str, str, ms.ReplyTo]:
    payload = ctx.payload if isinstance(ctx.payload, Mapping) else {}
    conversation, token = str(payload.get("conversation") or ""), str(payload.get("token") or "")
    reply_to = ms.ReplyTo.from_payload(payload.get("reply_to"))
    if not conversation or not token or reply_to is None:
        raise PermanentError("bad_reply_payload", "conversation, token and reply_to are required")
    return conversation, token, reply_to


def _state(
    key: Mapping[str, str], expression: str, values: dict[str, Any], *, was: tuple[str, ...], attempt: int
) -> Update:
    """A move of the reply's send state, only from `was` and only for this attempt."""
    placeholders = [f":was{n}" for n in range(len(was))]
    return Update(
        table=Table.DATA,
        key=key,
        expression=expression,
        condition=f"#state IN ({', '.join(placeholders)}) AND #attempts = :attempt",
        names={"#state": "send_state", "#attempts": "send_attempts", **_names(expression)},
        values={**values, **dict(zip(placeholders, was, strict=True)), ":attempt": attempt},
        on_conflict=OnConflict.SKIP,
    )


def _names(expression: str) -> dict[str, str]:
    return {
        f"#{name}": name
        for name in ("message_id", "sent_text", "sent_at", "send_error", "resolved_by")
        if f"#{name}" in expression
    }


def _resolve_later(
    ctx: TaskContext, conversation: str, token: str, attempt: int, round_: int, reply_to: ms.ReplyTo
) -> FollowUp:

    delay = math.ceil(float(ctx.option("resolve_seconds", "10")))
    envelope = Envelope(
        id=f"resolve-{conversation_ref(ctx.envelope.tenant, conversation)}-{token}-{attempt}-{round_}",
        lane=ctx.lane,
        tenant=ctx.envelope.tenant,
        kind=RESOLVE,
        source="internal",
        created_at=ctx.now,
        deadline=None,
        payload={
            "conversation": conversation,
            "token": token,
            "attempt": attempt,
            "round": round_,
            "reply_to": reply_to.plain(),
        },
    )
    return FollowUp(envelope, delay_seconds=delay)


def send(ctx: TaskContext) -> TaskResult:

    conversation, token, reply_to = _payload(ctx)
    tenant = ctx.envelope.tenant
    ref = conversation_ref(tenant, conversation)
    key = reply_key(conversation_pk(tenant, conversation), token)
    reply = ctx.read(Table.DATA, key)
    if reply is None:
        marker = ctx.read(Table.STATE, marker_key(tenant, conversation))
        if marker is not None and str(marker.get("token", "")) != token:
            return TaskResult(superseded=True, detail={"conversation": ref, "reply": "superseded"})
        raise ReplyNotStored(f"the reply of conversation {ref} is not stored yet")
    state = str(reply.get("send_state") or ms.PENDING)
    attempts = int(reply.get("send_attempts") or 0)
    if state in (ms.SENT, ms.UNANSWERED):
        return TaskResult(detail={"conversation": ref, "reply": state, "already": True})
    if state in (ms.CALLING, ms.UNKNOWN):
        # An attempt whose outcome nobody knows (its copy timed out or crashed mid-send).
        unknown = _state(key, "SET #state = :unknown", {":unknown": ms.UNKNOWN}, was=(ms.CALLING,), attempt=attempts)
        return TaskResult(
            writes=(unknown,),
            follow_ups=(_resolve_later(ctx, conversation, token, attempts, 1, reply_to),),
            detail={"conversation": ref, "reply": ms.UNKNOWN, "attempt": attempts},
        )
    # Before the attempt is recorded: a send deferred for the number's rate must leave no attempt
    # behind, or the deferred copy would find it `calling` and wait for a status that never comes.
    ctx.send_room(reply_to)
    attempt = attempts + 1
    claim = Update(
        table=Table.DATA,
        key=key,
        expression="SET #state = :calling, #attempts = :attempt",
        condition="(attribute_not_exists(#state) OR #state IN (:pending, :retry)) AND "
        "(attribute_not_exists(#attempts) OR #attempts = :before)",
        names={"#state": "send_state", "#attempts": "send_attempts"},
        values={
            ":calling": ms.CALLING,
            ":attempt": attempt,
            ":pending": ms.PENDING,
            ":retry": ms.RETRY,
            ":before": attempts,
        },
        on_conflict=OnConflict.SKIP,
    )
    if not ctx.write_now(claim):
        raise AttemptTaken(f"another copy is sending the reply of conversation {ref}")
    text = str(reply.get("text") or "")
    callback = ms.callback(tenant, conversation, token, attempt)
    try:
        sent = ctx.meta.send(reply_to, text, callback, timeout=ctx.remaining())
    except ms.OutcomeUnknown:
        unknown = _state(key, "SET #state = :unknown", {":unknown": ms.UNKNOWN}, was=(ms.CALLING,), attempt=attempt)
        return TaskResult(
            writes=(unknown,),
            follow_ups=(_resolve_later(ctx, conversation, token, attempt, 1, reply_to),),
            detail={"conversation": ref, "reply": ms.UNKNOWN, "attempt": attempt},
        )
    except ms.SendRejected as rejected:
        gone = _state(
            key,
            "SET #state = :unanswered, #send_error = :reason",
            {":unanswered": ms.UNANSWERED, ":reason": rejected.reason},
            was=(ms.CALLING,),
            attempt=attempt,
        )
        return TaskResult(
            writes=(gone,), detail={"conversation": ref, "reply": ms.UNANSWERED, "reason": rejected.reason}
        )
    except (ms.SendRefused, ms.TokenInvalid, ms.NotSent, TransientError) as refused:
        # Meta said no, or was never reached: nothing was sent, so the attempt is handed back.
        ctx.write_now(
            _state(
                key,
                "SET #state = :retry, #send_error = :reason",
                {":retry": ms.RETRY, ":reason": refused.reason},
                was=(ms.CALLING,),
                attempt=attempt,
            )
        )
        raise
    done = _state(
        key,
        "SET #state = :sent, #message_id = :message_id, #sent_text = :text, #sent_at = :now",
        {":sent": ms.SENT, ":message_id": sent.message_id, ":text": text, ":now": ctx.now},
        was=(ms.CALLING, ms.UNKNOWN),
        attempt=attempt,
    )
    return TaskResult(writes=(done,), detail={"conversation": ref, "reply": ms.SENT, "attempt": attempt})


def resolve(ctx: TaskContext) -> TaskResult:

    conversation, token, reply_to = _payload(ctx)
    payload = ctx.payload
    attempt, round_ = int(payload.get("attempt") or 0), int(payload.get("round") or 1)
    tenant = ctx.envelope.tenant
    ref = conversation_ref(tenant, conversation)
    key = reply_key(conversation_pk(tenant, conversation), token)
    reply = ctx.read(Table.DATA, key) or {}
    state = str(reply.get("send_state") or "")
    if state not in (ms.CALLING, ms.UNKNOWN) or int(reply.get("send_attempts") or 0) != attempt:
        # A status resolved it (sent), or it is already final.
        return TaskResult(detail={"conversation": ref, "reply": state or "gone", "resolved": True})
    if round_ < int(ctx.option("resolve_rounds", "3")):
        return TaskResult(
            follow_ups=(_resolve_later(ctx, conversation, token, attempt, round_ + 1, reply_to),),
            detail={"conversation": ref, "reply": ms.UNKNOWN, "round": round_},
        )
    gone = _state(
        key,
        "SET #state = :unanswered, #send_error = :reason",
        {":unanswered": ms.UNANSWERED, ":reason": "outcome_unknown"},
        was=(ms.CALLING, ms.UNKNOWN),
        attempt=attempt,
    )
    return TaskResult(writes=(gone,), detail={"conversation": ref, "reply": ms.UNANSWERED, "reason": "outcome_unknown"})


def resolved_by_status(status_callback: str, status: str, message_id: str) -> Update | None:
    """What a WhatsApp status carrying one of our references does to its reply: `sent` (it went
    out, whatever we recorded), or `unanswered` for a `failed` one. None for anyone else's."""

    found = ms.read_callback(status_callback)
    if found is None:
        return None
    tenant, conversation, token, attempt = found
    key = reply_key(conversation_pk(tenant, conversation), token)
    if status == "failed":
        return _state(
            key,
            "SET #state = :unanswered, #send_error = :reason",
            {":unanswered": ms.UNANSWERED, ":reason": "delivery_failed"},
            was=(ms.CALLING, ms.UNKNOWN),
            attempt=attempt,
        )
    return _state(
        key,
        "SET #state = :sent, #message_id = :message_id, #resolved_by = :status",
        {":sent": ms.SENT, ":message_id": message_id, ":status": "status"},
        was=(ms.CALLING, ms.UNKNOWN, ms.UNANSWERED),
        attempt=attempt,
    )
