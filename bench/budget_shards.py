"""Write units a second on the shared `llm` budget's items at prod's size, one item against shards.

`python -m bench.budget_shards [ENV]` (prod by default). DynamoDB allows 1,000 write units a
second on one item; a budget item takes two writes per dependency call (the lease taken, then
given back) and one failed conditional write per refused taker, each costing a write unit per
started KB of the item. The item sizes are measured: the budget is filled in moto by the
consumer's own lease adapter and its items read back. The rates come from the environment's lanes
(stacks/config/environments.py, stacks/config/lanes.py): the planned peak is each lane's
`peak_per_second`, one model call per unit of work; the bound on takers is the lanes' summed
MaximumConcurrency, one consumer instance each.

The flood: a full budget, and deferred work asking it for a slot again. Before the shards every
refusal was a failed write on the one item, as often as the consumers could ask; with them, an
instance asks a shard it found full at most once every FULL_FOR_SECONDS.
"""

from __future__ import annotations

import contextlib
import math
import sys
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import replace

from bench.consumer_costs import item_size
from bench.consumer_world import REGION, fake_aws

PER_ITEM_WRITE_UNITS = 1000
REFUSAL_SECONDS = 0.025
"""What a refusal-only invocation takes (its lookup, the take, the re-send and the drain count,
at about 6 ms a call): how often one instance can ask a full budget, when nothing spaces it out."""


def _units(size: int) -> int:
    return max(1, math.ceil(size / 1024))


def _state_table(dynamodb) -> None:  # type: ignore[no-untyped-def]
    dynamodb.create_table(
        TableName="state",
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
    )


def _fill(budget, instances: int, extra_asks: int) -> tuple[Counter[str], dict[str, int], int]:  # type: ignore[no-untyped-def]
    """Fill `budget` from `instances` consumers, then ask it `extra_asks` more times within the
    same second: (writes per item, item sizes in bytes, slots granted)."""
    import boto3

    from pipeline.adapters.leases import LeaseBudgets

    dynamodb = boto3.client("dynamodb", region_name=REGION)
    with contextlib.suppress(dynamodb.exceptions.ResourceNotFoundException):
        dynamodb.delete_table(TableName="state")
    _state_table(dynamodb)
    writes: Counter[str] = Counter()
    dynamodb.meta.events.register(
        "provide-client-params.dynamodb.UpdateItem", lambda params, **_: writes.update([params["Key"]["pk"]["S"]])
    )
    now = time.time()
    takers = [LeaseBudgets(dynamodb, "state", lambda: now) for _ in range(instances)]
    granted = sum(takers[n % instances].acquire(budget, 1, hold_seconds=60).granted for n in range(budget.limit))
    for n in range(extra_asks):
        takers[n % instances].acquire(budget, 1, hold_seconds=60)
    sizes = {
        key: item_size(dynamodb.get_item(TableName="state", Key={"pk": {"S": key}})["Item"]) for key in sorted(writes)
    }
    return writes, sizes, granted


def main(argv: Sequence[str]) -> None:
    from pipeline.domain.dependencies import budgets
    from stacks.config.environments import ENVIRONMENTS, LLM_DEPENDENCY

    env = ENVIRONMENTS[argv[0] if argv else "prod"]
    dependency = env.dependency(LLM_DEPENDENCY)
    lanes = [lane.policy for lane in env.lanes if lane.policy.dependency == LLM_DEPENDENCY]
    peak_calls = sum(lane.traffic.peak_per_second for lane in env.lanes if lane.policy.dependency == LLM_DEPENDENCY)
    in_flight = sum(
        lane.traffic.peak_per_second * lane.policy.service_seconds
        for lane in env.lanes
        if lane.policy.dependency == LLM_DEPENDENCY
    )
    instances = sum(lane.max_concurrency for lane in lanes)
    shortest_hold = min(lane.service_seconds for lane in lanes)
    sharded = budgets.dependency(LLM_DEPENDENCY, dependency.limit, dependency.mode)
    single = replace(sharded, shards=1)
    print(f"{env.name}: llm budget {dependency.limit} slots, lanes {', '.join(lane.name for lane in lanes)}")
    print(
        f"  planned peak {peak_calls:g} calls/s, about {in_flight:.1f} in flight; up to {instances} consumer "
        f"instances at once (the lanes' MaximumConcurrency); shortest hold {shortest_hold:g} s"
    )
    asks = 1000
    with fake_aws():
        before_writes, before_sizes, before_granted = _fill(single, instances, asks)
        after_writes, after_sizes, after_granted = _fill(sharded, instances, asks)

    full = max(before_sizes.values())
    unit_before = _units(full)
    peak_before = 2 * peak_calls * unit_before
    flood_rate = instances / REFUSAL_SECONDS
    flood_before = flood_rate * unit_before
    print("\nbefore: one item")
    print(f"  item at {dependency.limit} leases: {full} B = {unit_before} WCU a write; {2 * unit_before} WCU a call")
    print(
        f"  planned peak: {2 * peak_calls:g} writes/s x {unit_before} WCU = {peak_before:g} WCU/s "
        f"({peak_before / PER_ITEM_WRITE_UNITS:.0%} of the item's limit)"
    )
    print(
        f"  flood: {instances} instances re-asking every {REFUSAL_SECONDS * 1000:g} ms = {flood_rate:g} failed "
        f"writes/s x {unit_before} WCU = {flood_before:g} WCU/s ({flood_before / PER_ITEM_WRITE_UNITS:.0%})"
    )
    print(
        f"  measured: {before_granted} granted, then {asks} asks in one second: "
        f"{max(before_writes.values())} writes on the one item"
    )

    shards = budgets.shards_of(sharded)
    biggest = max(after_sizes.values())
    unit_after = _units(biggest)
    per_shard_peak = 2 * peak_calls / len(shards) * unit_after
    refusals = instances / budgets.FULL_FOR_SECONDS * unit_after
    most_slots = max(shard.limit for shard in shards)
    busiest = 2 * most_slots / shortest_hold * unit_after
    worst = busiest + refusals
    print(f"\nafter: {len(shards)} shards of {', '.join(str(shard.limit) for shard in shards)} slots")
    print(f"  fullest item: {biggest} B = {unit_after} WCU a write; {2 * unit_after} WCU a call")
    print(
        f"  planned peak: {2 * peak_calls / len(shards):g} writes/s an item x {unit_after} WCU = "
        f"{per_shard_peak:g} WCU/s ({per_shard_peak / PER_ITEM_WRITE_UNITS:.1%}), plus at most "
        f"{refusals:g} WCU/s of refusals"
    )
    print(
        f"  any load: a full shard turns over at most {most_slots} slots every {shortest_hold:g} s "
        f"({busiest:g} WCU/s) plus {instances} instances x 1 refusal/{budgets.FULL_FOR_SECONDS:g} s "
        f"({refusals:g} WCU/s) = {worst:g} WCU/s ({worst / PER_ITEM_WRITE_UNITS:.1%} of the item's limit)"
    )
    print(
        f"  measured: {after_granted} granted, then {asks} asks in one second: writes per item "
        + ", ".join(f"{key.rsplit('#', 1)[1]}: {count}" for key, count in sorted(after_writes.items()))
    )


if __name__ == "__main__":
    main(sys.argv[1:])
