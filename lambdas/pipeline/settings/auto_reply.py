"""Auto-reply: which tenants' customers the model answers without a product in between. Pure.

A tenant (bound to its Meta assets, settings/tenant_assets.py) turns it on per channel
(`channels`: whatsapp, messenger, instagram). Then the messages lane turns each inbound text it
stores into a turn on the ai lane (tasks/auto_reply.py). What is not text (an image, a voice
note, a location) is answered only when the tenant's `media` says `answer`; `leave` (the default)
leaves it to people. Every environment ships with no tenant on (prod replies to nobody) except
local's `shop-1`.

`echo_pause_seconds`: how long a person's own message to the customer (an echo: Messenger's and
Instagram's `message_echoes`, WhatsApp's `smb_message_echoes`) keeps the model quiet in that
conversation. `opt_out_keywords`: a customer's message that is exactly one of these (case and
surrounding blanks aside) stops auto-replies to them until an operator turns them on again
(`lanectl auto-reply on`). `own_app_ids`: the Meta app(s) replies are sent with, so an echo of our
own reply is told from a person's by its `app_id` too, not only by the `metadata` we send.

The stack writes it as AUTO_REPLY only for the messages lane, with the codec, and only where a
tenant has it on, so a function's 4 KB of variables pays nothing for it elsewhere.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from pipeline.settings import tenant_ids

CHANNELS = ("whatsapp", "messenger", "instagram")
ANSWER = "answer"
LEAVE = "leave"
MEDIA_CHOICES = (ANSWER, LEAVE)


@dataclass(frozen=True)
class TenantAutoReply:
    channels: tuple[str, ...] = CHANNELS
    media: str = LEAVE
    """What a message that is not text gets: `answer` (a turn reading its caption and type) or
    `leave` (stored, nothing more)."""

    def __post_init__(self) -> None:
        unknown = sorted(set(self.channels) - set(CHANNELS))
        if unknown:
            raise ValueError(f"auto-reply channels must be among {CHANNELS}, got {unknown}")
        if self.media not in MEDIA_CHOICES:
            raise ValueError(f"auto-reply media must be one of {MEDIA_CHOICES}, got {self.media!r}")


@dataclass(frozen=True)
class AutoReplySettings:
    tenants: dict[str, TenantAutoReply] = field(default_factory=dict)
    echo_pause_seconds: int = 3600
    opt_out_keywords: tuple[str, ...] = ("STOP",)
    own_app_ids: tuple[str, ...] = ()
    """The Meta app(s) the pipeline sends replies with: an echo naming one (`app_id`) is of our own
    reply, and pauses nothing, even where Meta does not hand back the Send API's `metadata`."""
    debounce_seconds: float = 4.0
    """How long after a conversation's newest message its turn runs, so a burst gets one reply: the
    ai lane's `debounce_seconds` task option, copied here at synthesis (stacks/runtime_env.py); not
    set by hand (stacks/config/environments.py refuses it), so the two lanes cannot disagree."""

    def __post_init__(self) -> None:
        bad = [tenant for tenant in self.tenants if not tenant_ids.is_valid(tenant)]
        if bad:
            raise ValueError(f"auto-reply names tenants that are not tenant ids: {bad}")
        if self.echo_pause_seconds < 0:
            raise ValueError("echo_pause_seconds must not be negative")
        if not 0 <= self.debounce_seconds <= 900:
            raise ValueError(f"debounce_seconds must be 0..900 (SQS's longest delay), got {self.debounce_seconds}")

    @property
    def on_anywhere(self) -> bool:
        return any(config.channels for config in self.tenants.values())

    def for_channel(self, tenant: str, channel: str) -> TenantAutoReply | None:
        """The tenant's auto-reply on `channel`, or None when it is off there."""
        config = self.tenants.get(tenant)
        return config if config is not None and channel in config.channels else None

    def ours(self, app_id: str) -> bool:
        return bool(app_id) and app_id in self.own_app_ids

    def opts_out(self, text: str) -> bool:
        words = text.strip().casefold()
        return any(words == keyword.casefold() for keyword in self.opt_out_keywords)
