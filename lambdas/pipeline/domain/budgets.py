"""Budgets as expiring leases: the arithmetic, free of any store.

A budget (a tenant's in-flight quota on a lane, or a dependency's shared concurrency) is one
item holding a counter of slots in use and one attribute per live lease (`lease_<id>` =
{n, exp}). A slot is one piece of work running: a dependency call, or an invocation working
through a tenant's records in its batch, which it runs one after another. Taking slots is one
conditional update that adds a lease and raises the counter; giving them back is one update that
removes the lease and lowers it. A consumer that crashes never gives its slots back, so every
lease carries an expiry, and the next taker that finds the budget full reads the item it failed
against (returned with the failed condition, no extra read), drops the expired leases and
retries with the counter corrected.

Leases are top-level attributes rather than entries of one map because DynamoDB cannot create a
map and set a path inside it in the same update, and a first taker would otherwise need two writes.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

LEASE_PREFIX = "lease_"
IN_USE = "in_use"
TENANT_QUOTA = "tenant_quota"
DEPENDENCY = "dependency"


class Mode(StrEnum):
    ENFORCE = "enforce"
    OBSERVE = "observe"
    """Count and log what would be deferred, defer nothing: how a new limit is rolled out."""


@dataclass(frozen=True)
class Budget:
    kind: str
    """TENANT_QUOTA or DEPENDENCY: a log field and metric dimension."""
    key: str
    limit: int
    mode: Mode


def tenant_quota(lane: str, tenant: str, limit: int, mode: str) -> Budget:
    return Budget(TENANT_QUOTA, f"quota#{lane}#{tenant}", limit, Mode(mode))


def dependency(name: str, limit: int, mode: str) -> Budget:
    """Keyed by the dependency alone: every lane using it shares one budget."""
    return Budget(DEPENDENCY, f"dependency#{name}", limit, Mode(mode))


@dataclass(frozen=True)
class Lease:
    id: str
    slots: int
    expires_at: float


@dataclass(frozen=True)
class LeaseBook:
    """A budget item as read back from the store."""

    in_use: int
    leases: tuple[Lease, ...]

    @classmethod
    def from_item(cls, item: Mapping[str, Any] | None) -> LeaseBook:
        if not item:
            return cls(0, ())
        leases = []
        for name, value in item.items():
            if name.startswith(LEASE_PREFIX) and isinstance(value, Mapping):
                leases.append(Lease(name[len(LEASE_PREFIX) :], int(value.get("n", 0)), float(value.get("exp", 0))))
        return cls(int(item.get(IN_USE, 0)), tuple(leases))

    def expired(self, now: float) -> tuple[Lease, ...]:
        return tuple(lease for lease in self.leases if lease.expires_at <= now)

    def live_slots(self, now: float) -> int:
        """Slots truly in use: the counter less what expired leases still hold (never below 0,
        in case an item was edited by hand)."""
        return max(0, self.in_use - sum(lease.slots for lease in self.expired(now)))


@dataclass(frozen=True)
class Share:
    """How many of the requested slots to take, and how many are over the limit."""

    take: int
    over: int


def share(book: LeaseBook, now: float, requested: int, budget: Budget) -> Share:
    free = max(0, budget.limit - book.live_slots(now))
    allowed = min(requested, free)
    over = requested - allowed
    # In observe mode the slots are taken anyway, so the counter keeps describing real load.
    return Share(take=requested if budget.mode is Mode.OBSERVE else allowed, over=over)


@dataclass(frozen=True)
class Grant:
    budget: Budget
    requested: int
    granted: int
    """Slots that may be used (all of those requested in observe mode)."""
    over: int
    """Requested slots past the limit: in enforce mode the work they were for is deferred, in
    observe mode it would have been."""
    lease_id: str | None
    slots: int
    """Slots the lease holds, to give back."""
