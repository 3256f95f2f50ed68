"""Budgets held as expiring leases in the state table (the arithmetic is in domain/dependencies/budgets.py).

Taking slots is one UpdateItem, conditional on the counter leaving room:

    SET lease_<id> = {n, exp}, expires_at = :ttl  ADD in_use :n
    IF attribute_not_exists(lease_<id>) AND (attribute_not_exists(in_use) OR in_use <= limit - n)

The lease's own id is in the condition because the SDK retries an update whose answer was lost,
and DynamoDB may have applied the first: without it the replay adds `n` again, which no release
or purge ever takes back (a release subtracts once, a purge only what a lease still holds), so the
budget would shrink for good. With it the replay is refused, and the item it hands back already
holds the lease: the acquisition took, and is granted as planned.

If the update fails, DynamoDB hands back the item as it was (ReturnValuesOnConditionCheckFailure), so
with no extra read the taker can see which leases have expired, remove them, correct the counter
and take what is free, in one more conditional update. Giving slots back is one UpdateItem that
removes the lease and lowers the counter, conditional on the lease still being there (a lease
already purged as expired must not lower the counter twice).

A sharded budget (domain/dependencies/budgets.py) is taken from its shards in turn, from a random one on, until
one grants; a shard found full is skipped by this instance for a second, and a budget all of whose
shards are believed full is refused with no call at all.
"""

from __future__ import annotations

import random
import uuid
from collections.abc import Callable, Sequence
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from pipeline import schema
from pipeline.adapters import items
from pipeline.domain.dependencies.budgets import (
    IN_USE,
    LEASE_PREFIX,
    Budget,
    FullShards,
    Grant,
    Lease,
    LeaseBook,
    Mode,
    share,
)

ROUNDS = 4
"""Conditional rounds per acquisition: each failed round returns the item, so under contention a
taker converges in a few; past that the budget counts as exhausted for this batch."""
ITEM_TTL_SLACK_SECONDS = 3600
"""An idle budget item is deleted by the table's TTL this long after its last lease expires."""


class _Conflict(Exception):
    def __init__(self, item: dict[str, Any] | None) -> None:
        super().__init__("condition failed")
        self.item = item


def _lease_id() -> str:
    return uuid.uuid4().hex[:16]


class LeaseBudgets:
    def __init__(
        self,
        dynamodb: Any,
        table: str,
        clock: Callable[[], float],
        *,
        new_lease_id: Callable[[], str] = _lease_id,
        on_release_error: Callable[[Grant, Exception], None] | None = None,
        rng: random.Random | None = None,
    ) -> None:
        self._dynamodb = dynamodb
        self._table = table
        self._clock = clock
        self._new_lease_id = new_lease_id
        self._on_release_error = on_release_error
        self._full = FullShards(rng or random.Random())  # noqa: S311 (spreading load, not secrets)

    def acquire(self, budget: Budget, slots: int, hold_seconds: float) -> Grant:
        if budget.shards <= 1:
            return self._acquire(budget, slots, hold_seconds)
        refused = Grant(budget, slots, 0, slots, None, 0)
        for shard in self._full.to_try(budget, self._clock()):
            grant = self._acquire(shard, slots, hold_seconds)
            if grant.granted or budget.mode is Mode.OBSERVE:
                return grant
            self._full.found_full(shard, self._clock())
            refused = grant
        return refused

    def _acquire(self, budget: Budget, slots: int, hold_seconds: float) -> Grant:
        lease_id = self._new_lease_id()
        book = LeaseBook(0, ())  # first round is optimistic: most takers find room
        for _ in range(ROUNDS):
            now = self._clock()
            plan = share(book, now, slots, budget)
            expired = book.expired(now)
            if plan.take == 0 and not expired:
                return Grant(budget, slots, 0, plan.over, None, 0)
            allowed = slots - plan.over
            try:
                self._update(budget, lease_id, plan.take, allowed, now + hold_seconds, expired)
            except _Conflict as conflict:
                if not (plan.take and LEASE_PREFIX + lease_id in (conflict.item or {})):
                    book = LeaseBook.from_item(conflict.item)
                    continue
                # Refused only because this very update was applied before its answer was lost
                # (the SDK sent it again): the lease is there, and the slots are taken once.
            granted = slots if budget.mode is Mode.OBSERVE else plan.take
            return Grant(budget, slots, granted, plan.over, lease_id if plan.take else None, plan.take)
        # Contention kept winning. Enforce: treat as full. Observe: proceed, counted as over.
        if budget.mode is Mode.OBSERVE:
            return Grant(budget, slots, slots, slots, None, 0)
        return Grant(budget, slots, 0, slots, None, 0)

    def _update(
        self, budget: Budget, lease_id: str, take: int, allowed: int, expires_at: float, expired: Sequence[Lease]
    ) -> None:
        names = {"#in_use": IN_USE}
        values: dict[str, Any] = {}
        sets: list[str] = []
        conditions: list[str] = []
        freed = sum(lease.slots for lease in expired)
        if take:
            names["#lease"] = LEASE_PREFIX + lease_id
            names["#ttl"] = schema.TTL
            sets.append("#lease = :lease, #ttl = :ttl")
            values[":lease"] = {"n": take, "exp": round(expires_at, 3)}
            values[":ttl"] = int(expires_at) + ITEM_TTL_SLACK_SECONDS
            # Room for the slots within the limit (in observe mode more are taken than allowed).
            values[":ceiling"] = budget.limit - allowed + freed
            conditions.append("attribute_not_exists(#lease)")
            conditions.append("(attribute_not_exists(#in_use) OR #in_use <= :ceiling)")
        for position, lease in enumerate(expired):
            names[f"#x{position}"] = LEASE_PREFIX + lease.id
            conditions.append(f"attribute_exists(#x{position})")
        expression = ""
        if sets:
            expression += "SET " + ", ".join(sets) + " "
        if expired:
            expression += "REMOVE " + ", ".join(f"#x{p}" for p in range(len(expired))) + " "
        delta = take - freed
        if delta:
            values[":delta"] = delta
            expression += "ADD #in_use :delta"
        kwargs: dict[str, Any] = {
            "TableName": self._table,
            "Key": items.to_item({schema.PK: budget.key}),
            "UpdateExpression": expression.strip(),
            "ConditionExpression": " AND ".join(conditions),
            "ExpressionAttributeNames": _used(names, expression + " ".join(conditions)),
            "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
        }
        if values:
            kwargs["ExpressionAttributeValues"] = items.to_item(values)
        try:
            self._dynamodb.update_item(**kwargs)
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") != "ConditionalCheckFailedException":
                raise
            raise _Conflict(items.from_item(exc.response.get("Item"))) from exc

    def release(self, grant: Grant) -> None:
        if grant.lease_id is None or grant.slots == 0:
            return
        self._full.freed(grant.budget)
        try:
            self._dynamodb.update_item(
                TableName=self._table,
                Key=items.to_item({schema.PK: grant.budget.key}),
                UpdateExpression="REMOVE #lease ADD #in_use :minus",
                ConditionExpression="attribute_exists(#lease)",
                ExpressionAttributeNames={"#lease": LEASE_PREFIX + grant.lease_id, "#in_use": IN_USE},
                ExpressionAttributeValues=items.to_item({":minus": -grant.slots}),
            )
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") == "ConditionalCheckFailedException":
                return  # purged as expired by another taker, who already corrected the counter
            self._release_failed(grant, exc)
        except BotoCoreError as exc:
            self._release_failed(grant, exc)

    def _release_failed(self, grant: Grant, exc: Exception) -> None:
        # Never raised: the lease expires on its own, and the record's outcome stands.
        if self._on_release_error is not None:
            self._on_release_error(grant, exc)


def _used(names: dict[str, str], text: str) -> dict[str, str]:
    """DynamoDB rejects unused placeholders."""
    return {placeholder: name for placeholder, name in names.items() if placeholder in text}
