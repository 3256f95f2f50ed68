"""The shared `llm` budget at prod's size: no budget item is a hot key, even when a flood of
deferred work keeps asking a full budget for a slot."""

from __future__ import annotations

from collections import Counter

import boto3

from bench.consumer_costs import item_size
from pipeline import schema
from pipeline.adapters.leases import LeaseBudgets
from pipeline.domain.dependencies import budgets
from stacks.config.environments import ENVIRONMENTS, LLM_DEPENDENCY
from tests.support.aws import REGION

PER_ITEM_WRITE_UNITS = 1000
"""DynamoDB's limit for one item (one partition key value), write units a second."""
INSTANCES = 52
"""Prod's consumers that can call the model at once: engagement's 12 and ai's 40."""


def test_a_flood_on_prods_full_llm_budget_writes_no_item_past_a_tenth_of_its_limit(aws, deployed):
    # Given prod's llm budget, taken by as many consumer instances as prod runs at once
    limit = ENVIRONMENTS["prod"].dependency(LLM_DEPENDENCY).limit
    budget = budgets.dependency(LLM_DEPENDENCY, limit, "enforce")
    dynamodb = boto3.client("dynamodb", region_name=REGION)
    writes: Counter[str] = Counter()
    dynamodb.meta.events.register(
        "provide-client-params.dynamodb.UpdateItem", lambda params, **_: writes.update([params["Key"][schema.PK]["S"]])
    )
    now = 1_000.0
    instances = [LeaseBudgets(dynamodb, "state", lambda: now) for _ in range(INSTANCES)]
    # When every slot is taken, then a thousand deferred takers ask within the same second
    granted = sum(instances[n % INSTANCES].acquire(budget, 1, hold_seconds=60).granted for n in range(limit))
    refused = [instances[n % INSTANCES].acquire(budget, 1, hold_seconds=60) for n in range(1000)]
    # Then the whole limit was granted, and no more
    assert granted == limit
    assert all(grant.granted == 0 for grant in refused)
    # And no budget item took more than a tenth of DynamoDB's per-item limit in that second, at
    # one write unit a write (each item stays under 1 KB)
    keys = sorted(writes)
    sizes = {key: item_size(dynamodb.get_item(TableName="state", Key={schema.PK: {"S": key}})["Item"]) for key in keys}
    assert max(sizes.values()) <= 1024, sizes
    assert max(writes.values()) <= PER_ITEM_WRITE_UNITS / 10, writes
