"""What keeps the model from answering a conversation it would otherwise answer by itself.

An auto-reply turn (tasks/auto_reply.py, tasks/ai.py) looks here before it calls the model, and is
settled as a no-op, named in its line's `settled`, when:

- `auto_reply_off`: an operator turned auto-reply off for the tenant (`lanectl auto-reply off
  --tenant`, the state table's `auto-reply#<tenant>` item) or for this conversation (`--conversation`);
- `opted_out`: the customer sent an opt-out keyword (settings/auto_reply.py) since auto-reply was
  last turned on for them;
- `echo_pause`: a person at the business wrote to the customer (an echo) less than the tenant's
  `echo_pause_seconds` ago, so the model does not talk over them.

A conversation's hold is one data-table item in the conversation's partition (`auto-reply`),
carrying the customer's `sender_hash`, so their erasure removes it with the conversation. Written
by the messages lane (a pause, an opt-out) it expires with the effects' retention, as every effect
does; an operator's switch (adapters/reply_switches.py) stays until turned on again (`lanectl
auto-reply on`), which also removes the opt-out. An echo pause ends by itself.
"""

from __future__ import annotations

from pipeline import schema
from pipeline.domain.consumer.work import TaskContext
from pipeline.domain.effects import OnConflict, Table, Update
from pipeline.tasks.conversations import conversation_pk

HOLD_SK = "auto-reply"
TENANT_SWITCH_PREFIX = "auto-reply#"
OFF = "auto_reply_off"
OPTED_OUT = "opted_out"
ECHO_PAUSE = "echo_pause"


def hold_key(tenant: str, conversation: str) -> dict[str, str]:
    """The conversation's hold (data table)."""
    return {schema.PK: conversation_pk(tenant, conversation), schema.SK: HOLD_SK}


def tenant_switch_key(tenant: str) -> dict[str, str]:
    """The tenant's off switch (state table): present while auto-reply is off for the tenant."""
    return {schema.PK: f"{TENANT_SWITCH_PREFIX}{tenant}"}


def held(ctx: TaskContext, tenant: str, conversation: str) -> str | None:
    """Why the model must not answer this conversation now, or None."""
    if ctx.read(Table.STATE, tenant_switch_key(tenant)) is not None:
        return OFF
    hold = ctx.read(Table.DATA, hold_key(tenant, conversation)) or {}
    if hold.get("off_at"):
        return OFF
    if hold.get("opted_out_at"):
        return OPTED_OUT
    if float(hold.get("paused_until") or 0) > ctx.now:
        return ECHO_PAUSE
    return None


def _with_sender(ctx: TaskContext, person: str, update: Update) -> Update:
    """`update` also setting the customer's `sender_hash`, so their erasure finds the hold."""
    sender = ctx.sender_hash(person)
    if sender is None:
        return update
    return Update(
        table=update.table,
        key=update.key,
        expression=f"{update.expression}, #sender = :sender",
        condition=update.condition,
        names={**update.names, "#sender": schema.SENDER_HASH},
        values={**update.values, ":sender": sender},
        on_conflict=update.on_conflict,
        standalone=update.standalone,
    )


def pause(ctx: TaskContext, tenant: str, conversation: str, until: float) -> Update:
    """Hold the conversation until `until`; a later pause already there stays."""
    return _with_sender(
        ctx,
        conversation,
        Update(
            table=Table.DATA,
            key=hold_key(tenant, conversation),
            expression="SET #until = :until",
            condition="attribute_not_exists(#until) OR #until < :until",
            names={"#until": "paused_until"},
            values={":until": until},
            on_conflict=OnConflict.SKIP,
            standalone=True,
        ),
    )


def opt_out(ctx: TaskContext, tenant: str, conversation: str) -> Update:
    """The customer asked for no more automatic replies; the first time asked is kept."""
    return _with_sender(
        ctx,
        conversation,
        Update(
            table=Table.DATA,
            key=hold_key(tenant, conversation),
            expression="SET #out = if_not_exists(#out, :now)",
            names={"#out": "opted_out_at"},
            values={":now": ctx.now},
            standalone=True,
        ),
    )
