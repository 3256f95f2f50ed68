"""Where a reply goes (`reply_to`), checked by Meta's real shapes and against the tenants' assets.

The business id becomes a Graph API path segment (`POST /{phone-number-id}/messages`), so it must be
a Meta object id, digits only (settings/tenant_assets.py): anything else is `reply_to_malformed`,
never retried. A reply goes out only from an asset its job's tenant owns (TENANT_ASSETS):
otherwise `reply_asset_not_bound`. The jobs API refuses both before anything is written
(domain/jobs/api.py), and the ai lane again before it counts or makes a send
(domain/consumer/task_context.py), since work reaches the lane by other paths too (a redrive, a replay).

A WhatsApp recipient is a phone number, or, for a customer who hid theirs behind a username, their
business-scoped user id (BSUID, domain/senders.py: `US.13491208655302741918`, a parent one
`US.ENT.11815799212886844830`); the send body then names it in `recipient` instead of `to`
(domain/dependencies/meta_send.py). Anything else, a BSUID with its country code in lower case or
cut short included, is `reply_to_malformed`: Meta would refuse it, and a retry cannot mend it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pipeline.domain import senders
from pipeline.domain.errors import PermanentError
from pipeline.settings import tenant_assets
from pipeline.settings.tenant_assets import MAX_ID_DIGITS, AssetBinding, is_meta_id

WHATSAPP = tenant_assets.WHATSAPP
MESSENGER = tenant_assets.MESSENGER
INSTAGRAM = tenant_assets.INSTAGRAM
CHANNELS = (WHATSAPP, MESSENGER, INSTAGRAM)
REPLY_TO_MALFORMED = "reply_to_malformed"
REPLY_ASSET_NOT_BOUND = "reply_asset_not_bound"
_WHATSAPP_RECIPIENT = re.compile(r"\+?[0-9][0-9 ()-]{0,30}")
"""A phone number as the Cloud API takes it in `to`: digits, maybe a leading `+`, and the spaces,
hyphens and parentheses Meta lets a number be written with."""


class ReplyToRefused(PermanentError):
    """A `reply_to` no reply may be sent to: malformed (`reply_to_malformed`), or naming a Meta
    asset its job's tenant does not own (`reply_asset_not_bound`). Never retried."""


def meta_id(value: str, what: str) -> str:
    """`value` when it has the shape of a Meta object id (settings/tenant_assets.py), else
    ReplyToRefused naming `what`; the value itself is not repeated, since it may be anything."""
    if not is_meta_id(value):
        raise ReplyToRefused(REPLY_TO_MALFORMED, f"{what} must be a Meta id: 1-{MAX_ID_DIGITS} digits")
    return value


def _text(value: Any) -> Any:
    """An id written as a JSON number (as Meta writes some) as its digits; anything else as it is."""
    return str(value) if isinstance(value, int) and not isinstance(value, bool) else value


def _recipient(channel: str, value: str) -> str:
    if channel == WHATSAPP:
        if senders.is_bsuid(value):
            return value
        if _WHATSAPP_RECIPIENT.fullmatch(value) is None or sum(c.isdigit() for c in value) > MAX_ID_DIGITS:
            raise ReplyToRefused(
                REPLY_TO_MALFORMED,
                "reply_to.recipient must be a phone number (digits, maybe a leading +) or a business-scoped "
                "user id (two capital letters, a dot, then letters and digits: US.13491208655302741918)",
            )
        return value
    return meta_id(value, "reply_to.recipient (a Page- or Instagram-scoped id)")


@dataclass(frozen=True)
class ReplyTo:
    """Where a conversation's replies go: its channel, the business's sending id (WhatsApp's
    phone-number id, or the Page id for Messenger and Instagram) and the customer's id there."""

    channel: str
    business_id: str
    recipient: str

    @classmethod
    def parse(cls, raw: Any) -> ReplyTo:
        """The `reply_to` of a payload, each id checked by its shape; ReplyToRefused
        (`reply_to_malformed`) naming what is wrong. The business id goes into a Graph API path,
        so nothing but digits passes."""
        if not isinstance(raw, Mapping):
            raise ReplyToRefused(REPLY_TO_MALFORMED, "reply_to must be an object")
        channel, business, recipient = (_text(raw.get(k)) for k in ("channel", "business_id", "recipient"))
        if channel not in CHANNELS:
            raise ReplyToRefused(REPLY_TO_MALFORMED, f"reply_to.channel must be one of {', '.join(CHANNELS)}")
        if not isinstance(business, str) or not isinstance(recipient, str):
            raise ReplyToRefused(REPLY_TO_MALFORMED, "reply_to needs business_id and recipient, as strings or numbers")
        return cls(channel, meta_id(business, "reply_to.business_id"), _recipient(channel, recipient))

    @classmethod
    def from_payload(cls, raw: Any) -> ReplyTo | None:
        """`parse`, or None when `raw` is not a usable reply_to."""
        try:
            return cls.parse(raw)
        except ReplyToRefused:
            return None

    def check_bound(self, tenant: str, assets: AssetBinding) -> ReplyTo:
        """Itself when `tenant` owns the asset it sends from, else ReplyToRefused
        (`reply_asset_not_bound`): a producer may reply only through its own tenant's assets."""
        if not assets.may_send(tenant, self.channel, self.business_id):
            raise ReplyToRefused(
                REPLY_ASSET_NOT_BOUND,
                f"tenant {tenant} does not own {self.channel} sender {self.business_id} (TENANT_ASSETS)",
            )
        return self

    @property
    def by_bsuid(self) -> bool:
        """A WhatsApp reply addressed by business-scoped user id rather than phone number."""
        return self.channel == WHATSAPP and senders.is_bsuid(self.recipient)

    def plain(self) -> dict[str, str]:
        return {"channel": self.channel, "business_id": self.business_id, "recipient": self.recipient}
