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

A dependency's budget is shared by every lane that calls it, so one item would take every call's
two writes, and every refused taker's failed conditional write, at two to three write units each
(the item holds a lease per call in flight): a flood of deferred work would reach DynamoDB's 1,000
write units a second per item, and every lane behind the budget would stall on throttling. So a
budget of more than `SLOTS_PER_SHARD` slots is split into shards, items of their own whose limits
add up to the budget's (`shards_of`): a taker tries them from a random one on, each item holds a
dozen leases at most (under 1 KB, one write unit), and a shard found full is not asked again by
the same instance for `FULL_FOR_SECONDS` (`FullShards`), which bounds the failed writes an item
takes to one a second per consumer instance. bench/budget_shards.py prints the arithmetic at
prod's peak.
"""

from __future__ import annotations

import math
import random
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pipeline.settings.budget_mode import Mode

LEASE_PREFIX = "lease_"
IN_USE = "in_use"
TENANT_QUOTA = "tenant_quota"
DEPENDENCY = "dependency"
SLOTS_PER_SHARD = 12
"""The most slots one budget item holds: twelve leases keep it under 1 KB (a write unit a write)."""
FULL_FOR_SECONDS = 1.0
"""How long an instance believes a shard it found full: far below the lanes' deferral delays
(5 s and more), so a slot freed meanwhile waits at most this for a taker from this instance."""


@dataclass(frozen=True)
class Budget:
    kind: str
    """TENANT_QUOTA or DEPENDENCY: a log field and metric dimension."""
    key: str
    limit: int
    mode: Mode
    shards: int = 1
    """Items the budget is split into (see the module's docstring); one keeps `key` itself."""


def tenant_quota(lane: str, tenant: str, limit: int, mode: str) -> Budget:
    return Budget(TENANT_QUOTA, f"quota#{lane}#{tenant}", limit, Mode(mode))


def dependency(name: str, limit: int, mode: str) -> Budget:
    """Keyed by the dependency alone: every lane using it shares one budget, in as many shards as
    its limit needs."""
    return Budget(DEPENDENCY, f"dependency#{name}", limit, Mode(mode), shards=shard_count(limit))


def shard_count(limit: int) -> int:
    return max(1, math.ceil(limit / SLOTS_PER_SHARD))


def shards_of(budget: Budget) -> tuple[Budget, ...]:
    """The items a budget is held in, each with its share of the limit (the shares add up to it)."""
    if budget.shards <= 1:
        return (budget,)
    share_of_each, rest = divmod(budget.limit, budget.shards)
    return tuple(
        Budget(budget.kind, f"{budget.key}#{n}", share_of_each + (1 if n < rest else 0), budget.mode)
        for n in range(budget.shards)
    )


class FullShards:
    """The shards of sharded budgets this instance found full lately, and until when it believes it."""

    def __init__(self, rng: random.Random) -> None:
        self._rng = rng
        self._until: dict[str, float] = {}

    def to_try(self, budget: Budget, now: float) -> list[Budget]:
        """The shards worth asking, from a random one on (so takers spread over them); none when
        every shard was found full within the last FULL_FOR_SECONDS."""
        shards = shards_of(budget)
        start = self._rng.randrange(len(shards))
        ordered = shards[start:] + shards[:start]
        return [shard for shard in ordered if self._until.get(shard.key, 0.0) <= now]

    def found_full(self, shard: Budget, now: float) -> None:
        self._until[shard.key] = now + FULL_FOR_SECONDS

    def freed(self, shard: Budget) -> None:
        """This instance gave a slot of the shard back: it has room again."""
        self._until.pop(shard.key, None)


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
