"""Which Meta assets each tenant owns: the binding that keeps one tenant's producer from sending
through another tenant's number or Page. Pure.

A tenant (a jobs API tenant id, settings/callers.py) owns WhatsApp Business Accounts, their
phone-number ids, Pages and Instagram accounts. A reply goes out only through an asset its job's
tenant owns (`may_send`): WhatsApp through one of its phone-number ids, Messenger through one of its
Pages, Instagram through one of its Pages or Instagram accounts (the Send API takes either). An
asset bound to two tenants is refused here, so `cdk synth` and the cold start fail naming it.

The environment's config holds an `AssetBinding` (stacks/config/environments.py); the stack writes it
as TENANT_ASSETS only for the functions that read it (the jobs API and the lanes that send). Lambda
allows 4 KB of variables a function and the jobs function already holds about 3.5 KB, so the
binding is written as text (`to_text`), not with the policy codec whose JSON Lambda counts with
every quote escaped: `shop-1=w1000001,p1098765,f1077,i1078 acme=p2098765`, a tenant's name and
each id with a letter for its kind, 2 bytes an id beside its digits where the codec's JSON took
about 40 bytes a tenant and 3 an id. Even so the variable holds a handful of tenants, not hundreds
(docs/RUNBOOK.md, Binding a tenant's Meta assets).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, fields

from pipeline.settings import tenant_ids

MAX_ID_DIGITS = 20
"""Meta's ids are 64-bit numbers written in decimal: at most 20 digits."""
_META_ID = re.compile(rf"[0-9]{{1,{MAX_ID_DIGITS}}}")

WHATSAPP = "whatsapp"
MESSENGER = "messenger"
INSTAGRAM = "instagram"


def is_meta_id(value: object) -> bool:
    """Whether `value` has the shape of a Meta object id (a phone-number, Page, Instagram or
    WhatsApp Business Account id): 1-20 ASCII digits, nothing else."""
    return isinstance(value, str) and _META_ID.fullmatch(value) is not None


@dataclass(frozen=True)
class TenantAssets:
    """One tenant's Meta assets, each a tuple of ids."""

    waba: tuple[str, ...] = ()
    """WhatsApp Business Account ids (a WhatsApp delivery's entry id)."""
    phones: tuple[str, ...] = ()
    """WhatsApp phone-number ids (what a WhatsApp reply is sent from)."""
    pages: tuple[str, ...] = ()
    """Facebook Page ids (a Messenger delivery's entry id, what a Messenger reply is sent from)."""
    instagram: tuple[str, ...] = ()
    """Instagram account ids (an Instagram delivery's entry id)."""

    def __post_init__(self) -> None:
        for kind in fields(self):
            ids = getattr(self, kind.name)
            bad = [value for value in ids if not is_meta_id(value)]
            if bad:
                raise ValueError(f"{kind.name} ids must be 1-{MAX_ID_DIGITS} digits, got {bad}")
            if len(set(ids)) != len(ids):
                raise ValueError(f"{kind.name} lists an id twice")

    def all_ids(self) -> tuple[str, ...]:
        return self.waba + self.phones + self.pages + self.instagram

    def senders_for(self, channel: str) -> tuple[str, ...]:
        """The ids a reply on `channel` may be sent from."""
        if channel == WHATSAPP:
            return self.phones
        if channel == MESSENGER:
            return self.pages
        if channel == INSTAGRAM:
            return self.pages + self.instagram
        return ()


_LETTERS = {"w": "waba", "p": "phones", "f": "pages", "i": "instagram"}
"""TENANT_ASSETS' letter for each kind of asset (f: a Facebook Page)."""


@dataclass(frozen=True)
class AssetBinding:
    """TENANT_ASSETS: tenant id to the assets it owns. Empty binds nothing, so no reply is sent."""

    tenants: dict[str, TenantAssets] = field(default_factory=dict)

    def __post_init__(self) -> None:
        owners: dict[str, str] = {}
        for tenant, assets in self.tenants.items():
            if not tenant_ids.is_valid(tenant):
                raise ValueError(f"{tenant!r} is not a tenant id")
            for asset in assets.all_ids():
                other = owners.setdefault(asset, tenant)
                if other != tenant:
                    raise ValueError(f"Meta asset {asset} is bound to two tenants: {other} and {tenant}")

    def owner_of(self, asset: str) -> str | None:
        """The tenant that owns `asset`, or None when none does."""
        return next((tenant for tenant, assets in self.tenants.items() if asset in assets.all_ids()), None)

    def may_send(self, tenant: str, channel: str, business_id: str) -> bool:
        """Whether `tenant` may send a reply on `channel` from `business_id`."""
        assets = self.tenants.get(tenant)
        return assets is not None and business_id in assets.senders_for(channel)

    def to_text(self) -> str:
        """TENANT_ASSETS: `tenant=<letter><id>,...` per tenant, space-separated (`_LETTERS`)."""
        return " ".join(
            f"{tenant}="
            + ",".join(letter + asset for letter, kind in _LETTERS.items() for asset in getattr(assets, kind))
            for tenant, assets in self.tenants.items()
        )

    @classmethod
    def from_text(cls, text: str) -> AssetBinding:
        """`to_text` read back, checked as the stack's config was; ValueError naming what is wrong."""
        tenants: dict[str, TenantAssets] = {}
        for part in text.split():
            tenant, equals, listed = part.partition("=")
            if not equals or tenant in tenants:
                raise ValueError(f"{part!r} is not one tenant's `tenant=<letter><id>,...`, or names it twice")
            ids: dict[str, list[str]] = {kind: [] for kind in _LETTERS.values()}
            for item in filter(None, listed.split(",")):
                kind = _LETTERS.get(item[0])
                if kind is None:
                    raise ValueError(f"{tenant}: {item!r} does not start with one of {', '.join(_LETTERS)}")
                ids[kind].append(item[1:])
            tenants[tenant] = TenantAssets(**{kind: tuple(values) for kind, values in ids.items()})
        return cls(tenants)
