"""Per Meta source account, when its last delivery came, and which accounts that normally send
have gone quiet. Pure: the door notes accounts through a port (adapters/accounts_seen.py), the
sweeper reads them back and counts the quiet ones (handlers/sweeper.py).

An account is an entry's `id` in a delivery (a Page, an Instagram account, a WhatsApp Business
Account), with its product from the delivery's `object`. Its item holds `last_seen` and, for
each of the last `slots` slots, the number of the latest slot it was seen in, in the attribute
`s<slot % slots>`: a fixed number of attributes, so the item never grows and one UpdateItem both
stamps the time and marks the slot. "Normally sends" is counted back from the last delivery
(settings/silence_policy.py), so a long silence keeps paging instead of wearing away its own
history; the item's TTL ends it.

The door writes at most once per `note_seconds` (and once per slot) per account per instance
(`NoteThrottle`), so its two calls a delivery stay two, amortised: an instance adds at most one
write per account it hears from per interval. `last_seen` is therefore up to `note_seconds` older
than the account's true last delivery: a silence pages between `quiet_seconds - note_seconds`
and `quiet_seconds` after it began.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from pipeline.settings import tenant_ids
from pipeline.settings.silence_policy import AccountSilence

PRODUCTS = {"whatsapp_business_account": "whatsapp", "page": "page", "instagram": "instagram"}
"""A delivery's `object` to the product its entries' ids belong to."""
LAST_SEEN = "last_seen"
PRODUCT = "product"
SLOT_PREFIX = "s"
MAX_ACCOUNTS_A_DELIVERY = 10
"""Meta batches entries of several accounts rarely; a delivery naming more notes the first ten
(the rest are noted by their next delivery)."""
MAX_REMEMBERED = 10_000
"""Accounts an instance remembers noting; past it, it forgets them all (and notes each again once)."""


@dataclass(frozen=True)
class Account:
    id: str
    product: str
    """whatsapp, page or instagram."""


def accounts_in(payload: Any) -> list[Account]:
    """The source accounts of a delivery: each entry's id, once, in order."""
    if not isinstance(payload, dict):
        return []
    source = payload.get("object")
    product = PRODUCTS.get(source) if isinstance(source, str) else None
    entries = payload.get("entry")
    if product is None or not isinstance(entries, list):
        return []
    found: dict[str, Account] = {}
    for entry in entries:
        value = entry.get("id") if isinstance(entry, dict) else None
        if isinstance(value, int) and not isinstance(value, bool):
            value = str(value)
        if tenant_ids.is_valid(value) and value not in found:
            found[value] = Account(value, product)
        if len(found) == MAX_ACCOUNTS_A_DELIVERY:
            break
    return list(found.values())


def slot_of(at: float, policy: AccountSilence) -> int:
    return int(at // policy.slot_seconds)


def slot_field(slot: int, policy: AccountSilence) -> str:
    return f"{SLOT_PREFIX}{slot % policy.slots}"


class NoteThrottle:
    """Per instance: whether an account is due a note: `note_seconds` after its last one, or at
    its first delivery in a new slot (so every slot it sent in is marked, however the interval
    falls). Shared by the requests one instance serves, so it is locked; the local runtime runs
    its threads."""

    def __init__(self, policy: AccountSilence) -> None:
        self._policy = policy
        self._last: dict[str, float] = {}
        self._lock = threading.Lock()

    def due(self, accounts: Iterable[Account], now: float) -> list[Account]:
        due = []
        with self._lock:
            if len(self._last) > MAX_REMEMBERED:
                self._last.clear()
            for account in accounts:
                last = self._last.get(account.id)
                if (
                    last is None
                    or now >= last + self._policy.note_seconds
                    or slot_of(now, self._policy) != slot_of(last, self._policy)
                ):
                    self._last[account.id] = now
                    due.append(account)
        return due


@dataclass(frozen=True)
class Seen:
    """One account's item, read back."""

    account: str
    product: str
    last_seen: float
    slots: frozenset[int]
    """The slots (absolute numbers) it had deliveries in, as far as the item remembers."""

    @classmethod
    def from_item(cls, account: str, item: Mapping[str, Any]) -> Seen:
        slots = frozenset(
            int(value)
            for name, value in item.items()
            if name.startswith(SLOT_PREFIX) and name[len(SLOT_PREFIX) :].isdigit()
        )
        return cls(account, str(item.get(PRODUCT, "")), float(item.get(LAST_SEEN, 0)), slots)

    def active_slots(self, policy: AccountSilence) -> int:
        """Slots with deliveries among the `slots` ending with the slot of the last delivery."""
        last = slot_of(self.last_seen, policy)
        return sum(1 for slot in self.slots if last - policy.slots < slot <= last)

    def normally_sends(self, policy: AccountSilence) -> bool:
        return self.active_slots(policy) >= policy.active_slots

    def quiet_for(self, now: float) -> float:
        return max(0.0, now - self.last_seen)

    def is_quiet(self, now: float, policy: AccountSilence) -> bool:
        return self.normally_sends(policy) and self.quiet_for(now) > policy.quiet_seconds


def quiet_accounts(seen: Iterable[Seen], now: float, policy: AccountSilence) -> list[Seen]:
    """The accounts that normally send and have been quiet too long, longest quiet first."""
    return sorted((s for s in seen if s.is_quiet(now, policy)), key=lambda s: s.last_seen)
