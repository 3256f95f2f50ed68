"""`lanectl auto-reply off|on --tenant T [--conversation ID]`: stop or restart the model's own replies.

The environment's config says which tenants have auto-reply on (Environment.auto_reply); this is
the operator's hand on it at run time, for an incident (the model answers badly) or a customer a
person has taken over. Off for a tenant: no turn it starts answers anyone, from the next turn on.
Off for a conversation (the customer's id as Meta sends it: a WhatsApp number without `+`, a
page- or Instagram-scoped id): that customer only. On undoes either, and for a conversation also
clears the customer's opt-out (tasks/reply_holds.py); an echo's pause ends by itself. A turn
settled by a switch commits nothing but its line's `settled`, and sends nothing.
"""

from __future__ import annotations

from ops.context import Context
from ops.errors import AWS, OK, USAGE, OpsError
from pipeline.adapters.reply_switches import ReplySwitches
from pipeline.adapters.sender_key import SenderKey, SenderKeyUnavailable
from pipeline.domain import senders
from pipeline.tasks.reply_holds import hold_key, tenant_switch_key


def switch(ctx: Context, tenant: str, conversation: str | None, *, on: bool) -> int:
    if tenant not in ctx.env.auto_reply.tenants:
        configured = ", ".join(sorted(ctx.env.auto_reply.tenants)) or "none"
        raise OpsError(
            f"{ctx.env.name} has no auto-reply for tenant {tenant!r} (configured: {configured}); "
            "a tenant is given auto-reply in its Environment.auto_reply",
            USAGE,
        )
    deployment = ctx.deployment()
    switches = ReplySwitches(
        ctx.aws.client("dynamodb"),
        deployment.output("StateTableName"),
        deployment.output("DataTableName"),
        ctx.clock,
    )
    word = "on" if on else "off"
    if conversation is None:
        switches.tenant(tenant_switch_key(tenant), on=on)
        ctx.console.line(f"auto-reply {word} for tenant {tenant}")
        return OK
    if not conversation.strip():
        raise OpsError("--conversation takes the customer's id as Meta sends it", USAGE)
    try:
        key = SenderKey(ctx.aws.client("secretsmanager"), deployment.output("SenderKeyArn")).key()
    except SenderKeyUnavailable as exc:
        raise OpsError(f"{exc}; check this stack's SenderKey secret and your access to it", AWS) from exc
    sender_hash = senders.sender_hash(key, conversation)
    switches.conversation(hold_key(tenant, conversation), sender_hash, on=on)
    # The id is the operator's own input; the line names the conversation by its hash only.
    ctx.console.line(f"auto-reply {word} for one conversation of {tenant} (sender {sender_hash[:12]}…)")
    return OK
