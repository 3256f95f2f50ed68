"""ai lane: sending a turn's reply to the customer through Meta, at most once.

The turn stores its reply with `send_state` `pending` and puts a `reply.send` on the lane
(tasks/ai.py). Sending (states in domain/dependencies/meta_send.py):

1. The reply is read. None yet: the turn's commit has not landed (retried shortly), or a newer
   message superseded the turn (nothing to send: the marker names another message and the reply,
   read again after the marker, is still missing). Already `sent` or `unanswered`: done.
2. `calling` or `unknown`: an earlier attempt's outcome is not known. It is never repeated:
   the reply waits for Meta's status to resolve it (`reply.resolve`).
3. Otherwise the attempt's reference is signed (WhatsApp's `biz_opaque_callback_data`: tenant,
   conversation, turn, attempt and the sending phone-number id under the reply callback key), the
   attempt is recorded (`calling`, the attempt's number, with a conditional write that only one
   copy of this work can make), then the reply is sent with that reference:
   - accepted: `sent`, with what was sent and Meta's message id (`resolved_by` `answer`);
   - refused (a rate limit, Meta's "temporarily unavailable", the token, no connection): nothing
     was sent, so the attempt is handed back (`retry`) and the record retried with the lane's backoff;
   - rejected for good (outside the service window, undeliverable): `unanswered`, with the reason;
   - no answer, or a 5xx that does not say Meta took nothing (`unknown_reason` `no_answer` or
     `meta_server_error`): `unknown`, and `reply.resolve` waits for Meta's status.
4. `reply.resolve` looks again every `resolve_seconds`, `resolve_rounds` times: a status that
   carried the attempt's reference (tasks/messages.py) made it `sent`; after the last round it is
   `unanswered` (reason `outcome_unknown`, its line saying after what), counted in
   `RepliesUnanswered` and alarmed, not resent.
5. Meta's statuses for the reply (`resolved_by_status`, only for a reference that verifies and a
   status from the number it names) are noted on it (`status_sent`, `status_delivered`,
   `status_read`, `status_failed`: Meta's timestamps); a `failed` one makes it `failed` with
   Meta's code (`failed_code`), even after `sent`, counted in `RepliesFailed` by code.

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
from pipeline.tasks.meta import StatusUpdate

SEND = "reply.send"
RESOLVE = "reply.resolve"
OUTCOME_UNKNOWN = "outcome_unknown"
STATUS_AT = {name: f"status_{name}" for name in ("sent", "delivered", "read", "failed")}
"""Where a reply notes each of Meta's statuses for it: Meta's timestamp, by status."""


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
        for name in ("message_id", "sent_text", "sent_at", "send_error", "resolved_by", "unknown_reason", "failed_code")
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
            # Once the marker names another message, this turn's commit (which checks the marker is
            # still its own) can no longer land: a reply missing after that read is missing for good.
            # The turn may have committed between the first read and the marker's, so look again.
            reply = ctx.read(Table.DATA, key)
            if reply is None:
                return TaskResult(superseded=True, detail={"conversation": ref, "reply": "superseded"})
    if reply is None:
        raise ReplyNotStored(f"the reply of conversation {ref} is not stored yet")
    state = str(reply.get("send_state") or ms.PENDING)
    attempts = int(reply.get("send_attempts") or 0)
    if state in (ms.SENT, ms.UNANSWERED, ms.FAILED):
        return TaskResult(detail={"conversation": ref, "reply": state, "already": True})
    if state in (ms.CALLING, ms.UNKNOWN):
        # An attempt whose outcome nobody knows (its copy timed out or crashed mid-send).
        unknown = _state(key, "SET #state = :unknown", {":unknown": ms.UNKNOWN}, was=(ms.CALLING,), attempt=attempts)
        return TaskResult(
            writes=(unknown,),
            follow_ups=(_resolve_later(ctx, conversation, token, attempts, 1, reply_to),),
            detail={"conversation": ref, "reply": ms.UNKNOWN, "attempt": attempts},
        )
    attempt = attempts + 1
    # Before the attempt is recorded, like the rate below: a reference that cannot be signed (the
    # key out of reach, or too long for Meta) must leave no attempt waiting for a status.
    callback = ctx.callbacks.sign(ms.CallbackRef(tenant, conversation, token, attempt, reply_to.business_id))
    # A send deferred for the number's rate must leave no attempt behind, or the deferred copy
    # would find it `calling` and wait for a status that never comes.
    ctx.send_room(reply_to)
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
    try:
        sent = ctx.meta.send(reply_to, text, callback, timeout=ctx.remaining())
    except ms.OutcomeUnknown as lost:
        unknown = _state(
            key,
            "SET #state = :unknown, #unknown_reason = :why",
            {":unknown": ms.UNKNOWN, ":why": lost.reason},
            was=(ms.CALLING,),
            attempt=attempt,
        )
        return TaskResult(
            writes=(unknown,),
            follow_ups=(_resolve_later(ctx, conversation, token, attempt, 1, reply_to),),
            detail={"conversation": ref, "reply": ms.UNKNOWN, "attempt": attempt, "unknown": lost.reason},
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
        # Meta said it took nothing, or was never reached: the attempt is handed back.
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
        "SET #state = :sent, #message_id = :message_id, #sent_text = :text, #sent_at = :now, #resolved_by = :how",
        {":sent": ms.SENT, ":message_id": sent.message_id, ":text": text, ":now": ctx.now, ":how": "answer"},
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
        {":unanswered": ms.UNANSWERED, ":reason": OUTCOME_UNKNOWN},
        was=(ms.CALLING, ms.UNKNOWN),
        attempt=attempt,
    )
    detail = {"conversation": ref, "reply": ms.UNANSWERED, "reason": OUTCOME_UNKNOWN}
    return TaskResult(writes=(gone,), detail={**detail, "after": str(reply.get("unknown_reason") or "no_answer")})


def resolved_by_status(update: StatusUpdate, found: ms.CallbackRef) -> Update:
    """What a WhatsApp status does to the reply its verified reference names (tasks/messages.py
    checks the reference and the sending number first). Every status is noted on the reply. A
    `failed` one makes it `failed` with Meta's code, from any state but a refusal's `unanswered`
    (Meta cannot fail what it never took); any other makes an attempt still waiting, or left
    unanswered for want of an answer, `sent`: it went out, whatever we recorded."""

    key = reply_key(conversation_pk(found.tenant, found.conversation), found.token)
    names = {
        "#state": "send_state",
        "#attempts": "send_attempts",
        "#message_id": "message_id",
        "#at": STATUS_AT[update.status],
    }
    values: dict[str, Any] = {":attempt": found.attempt, ":message_id": update.message_id, ":at": update.timestamp}
    if update.status == "failed":
        return Update(
            table=Table.DATA,
            key=key,
            expression="SET #state = :failed, #message_id = :message_id, #at = :at, #code = :code, "
            "#send_error = :reason",
            condition="#attempts = :attempt AND (#state IN (:calling, :unknown, :sent) OR "
            "(#state = :unanswered AND #send_error = :outcome_unknown))",
            names={**names, "#code": "failed_code", "#send_error": "send_error"},
            values={
                **values,
                ":failed": ms.FAILED,
                ":code": update.error_code,
                ":reason": "delivery_failed",
                ":calling": ms.CALLING,
                ":unknown": ms.UNKNOWN,
                ":sent": ms.SENT,
                ":unanswered": ms.UNANSWERED,
                ":outcome_unknown": OUTCOME_UNKNOWN,
            },
            on_conflict=OnConflict.SKIP,
        )
    return Update(
        table=Table.DATA,
        key=key,
        expression="SET #state = :sent, #message_id = :message_id, #at = :at, "
        "#resolved_by = if_not_exists(#resolved_by, :how)",
        condition="#attempts = :attempt AND #state IN (:calling, :unknown, :unanswered, :sent)",
        names={**names, "#resolved_by": "resolved_by"},
        values={
            **values,
            ":sent": ms.SENT,
            ":how": "status",
            ":calling": ms.CALLING,
            ":unknown": ms.UNKNOWN,
            ":unanswered": ms.UNANSWERED,
        },
        on_conflict=OnConflict.SKIP,
    )
