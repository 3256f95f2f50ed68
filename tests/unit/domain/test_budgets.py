"""Budget arithmetic at its edges: a full budget, a lease expiring this very instant, and budget
items as DynamoDB may hand them back (absent, partly written, edited by hand)."""

from __future__ import annotations

import random

import boto3

from pipeline.adapters.leases import LeaseBudgets
from pipeline.domain.dependencies import budgets
from pipeline.domain.dependencies.budgets import Budget, Lease, LeaseBook, Mode, Share
from tests.support.aws import REGION

QUOTA = budgets.tenant_quota("engagement", "page-1", 4, "enforce")


def test_a_tenant_quota_is_named_by_lane_and_tenant_and_says_what_it_is():
    assert budgets.tenant_quota("engagement", "page-1", 4, "observe") == Budget(
        budgets.TENANT_QUOTA, "quota#engagement#page-1", 4, Mode.OBSERVE
    )
    assert budgets.dependency("llm", 2, "enforce") == Budget(budgets.DEPENDENCY, "dependency#llm", 2, Mode.ENFORCE)


def test_a_full_budget_grants_nothing_and_an_overfull_one_no_less():
    # Given a quota of 4 with 4 slots live, and one with 5 live after a hand edit
    full = LeaseBook(4, (Lease("a", 4, 500.0),))
    overfull = LeaseBook(5, (Lease("a", 5, 500.0),))

    # Then every slot asked for is over, and none is taken
    assert budgets.share(full, 100.0, 3, QUOTA) == Share(take=0, over=3)
    assert budgets.share(overfull, 100.0, 3, QUOTA) == Share(take=0, over=3)


def test_a_lease_is_expired_at_the_instant_it_ends_and_not_before():
    book = LeaseBook(4, (Lease("a", 3, 100.0), Lease("b", 1, 200.0)))

    assert book.expired(99.999) == ()
    assert book.live_slots(99.999) == 4
    assert book.expired(100.0) == (Lease("a", 3, 100.0),)
    assert book.live_slots(100.0) == 1


def test_a_budget_item_that_does_not_exist_holds_nothing():
    assert LeaseBook.from_item(None) == LeaseBook(0, ())
    assert LeaseBook.from_item({}) == LeaseBook(0, ())


def test_a_budget_item_reads_its_counter_and_leases_and_nothing_else():
    # Given an item as DynamoDB returns it, with a map that is not a lease and a lease that is not a map
    item = {
        "pk": "quota#engagement#page-1",
        "in_use": 5,
        "expires_at": 4000,
        "lease_a": {"n": 3, "exp": 200.5},
        "lease_b": {"n": 2, "exp": 50},
        "notes": {"n": 9, "exp": 1},
        "lease_junk": "not a lease",
    }

    # Then it is read as the counter and the two leases
    assert LeaseBook.from_item(item) == LeaseBook(5, (Lease("a", 3, 200.5), Lease("b", 2, 50.0)))


def test_a_partly_written_lease_holds_no_slots_and_has_already_expired():
    # Given an item edited by hand: no counter, and a lease with neither size nor expiry
    book = LeaseBook.from_item({"lease_a": {}})

    assert book == LeaseBook(0, (Lease("a", 0, 0.0),))
    assert book.expired(0.5) == (Lease("a", 0, 0.0),)


def test_a_slot_is_free_again_at_the_instant_its_lease_expires(aws, deployed):
    # Given a budget of one slot held by a crashed consumer's lease ending at t=100
    dynamodb = boto3.client("dynamodb", region_name=REGION)
    budget = budgets.dependency("llm", 1, "enforce")
    crashed = LeaseBudgets(dynamodb, "state", lambda: 40.0)
    assert crashed.acquire(budget, 1, hold_seconds=60).granted == 1

    # When takers come just before and exactly at the expiry
    early = LeaseBudgets(dynamodb, "state", lambda: 99.999).acquire(budget, 1, hold_seconds=60)
    on_time = LeaseBudgets(dynamodb, "state", lambda: 100.0).acquire(budget, 1, hold_seconds=60)

    # Then the early one is refused and the one on time takes the slot the crash left behind
    assert (early.granted, early.over) == (0, 1)
    assert (on_time.granted, on_time.over) == (1, 0)


def test_a_budget_past_a_dozen_slots_is_split_into_shards_whose_limits_add_up_to_it():
    prods = budgets.dependency("llm", 45, "enforce")
    shards = budgets.shards_of(prods)
    assert [(shard.key, shard.limit) for shard in shards] == [
        ("dependency#llm#0", 12),
        ("dependency#llm#1", 11),
        ("dependency#llm#2", 11),
        ("dependency#llm#3", 11),
    ]
    # and a budget of a dozen slots or fewer keeps its one item, under its own key
    assert budgets.shards_of(budgets.dependency("llm", 12, "enforce")) == (budgets.dependency("llm", 12, "enforce"),)
    assert QUOTA.shards == 1


def test_a_shard_found_full_is_skipped_for_a_second_and_asked_again_once_a_slot_comes_back():
    full = budgets.FullShards(random.Random(7))
    budget = budgets.dependency("llm", 24, "enforce")
    first, second = budgets.shards_of(budget)
    full.found_full(first, now=10.0)
    assert full.to_try(budget, now=10.5) == [second]
    full.found_full(second, now=10.5)
    assert full.to_try(budget, now=10.9) == []  # refused with no call
    assert sorted(s.key for s in full.to_try(budget, now=11.0)) == [first.key]
    full.freed(second)
    assert sorted(s.key for s in full.to_try(budget, now=11.0)) == [first.key, second.key]
