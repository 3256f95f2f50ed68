"""The record pipeline's budgets, on in-memory ports: what a tenant's quota defers or lets through,
when there is time to take it, and a dependency budget around a task's external call."""

from __future__ import annotations

import pytest

from pipeline.domain.consumer.work import TaskResult
from pipeline.domain.dependencies import budgets as budget_rules
from pipeline.domain.envelope import Envelope
from pipeline.metric_names import Outcome
from tests.unit.consumer.memory import PortDown
from tests.unit.consumer.pipeline_harness import Pipeline, counter, lane_settings


def quota_lane(mode: str = "enforce") -> Pipeline:
    return Pipeline(lane=lane_settings(tenant_quota=2, tenant_quota_mode=mode))


def test_a_lone_tenants_full_batch_runs_under_one_slot_with_nothing_deferred():
    # Given a lane allowing a tenant two invocations at once, and a batch of ten from one tenant
    # with nobody else working on it
    p = quota_lane()
    records = [p.record(p.job(f"a-{n}", tenant="acme")) for n in range(10)]
    # When the batch runs with 30 s left
    assert p.run(records) == []
    # Then every record is done and none is re-sent: the records run one after another, so one
    # slot covers them all
    assert p.outcomes() == [Outcome.DONE] * 10
    assert p.queue.resent == []
    assert [(b.key, slots, hold) for b, slots, hold in p.budgets.acquired] == [("quota#messages#acme", 1, 35.0)]
    # And that one slot is given back
    assert [(g.budget.key, g.slots) for g in p.budgets.released] == [("quota#messages#acme", 1)]
    assert p.budgets.in_use == {"quota#messages#acme": 0}


def test_two_tenants_in_one_batch_take_one_slot_each_and_give_each_back():
    # Given three records from acme and one from bravo on a lane capping each tenant at two
    p = quota_lane()
    records = [p.record(p.job(f"a-{n}", tenant="acme")) for n in range(3)] + [p.record(p.job("b-0", tenant="bravo"))]
    # When the batch runs with 30 s left
    assert p.run(records) == []
    # Then all four are done, nothing re-sent
    assert p.outcomes() == [Outcome.DONE] * 4
    assert p.queue.resent == []
    # And each tenant's one slot was leased for the invocation and its slack, then given back
    assert [(b.key, slots, hold) for b, slots, hold in p.budgets.acquired] == [
        ("quota#messages#acme", 1, 35.0),
        ("quota#messages#bravo", 1, 35.0),
    ]
    assert [(g.budget.key, g.slots) for g in p.budgets.released] == [
        ("quota#messages#acme", 1),
        ("quota#messages#bravo", 1),
    ]
    assert set(p.budgets.in_use.values()) == {0}


def test_a_tenant_with_one_slot_free_runs_its_whole_batch_under_it():
    # Given acme's cap of two with one slot held by another invocation, and five of its records
    p = quota_lane()
    p.budgets.in_use["quota#messages#acme"] = 1
    records = [p.record(p.job(f"a-{n}", tenant="acme")) for n in range(5)]
    # When the batch runs
    assert p.run(records) == []
    # Then all five run under the free slot, and nothing is deferred
    assert p.outcomes() == [Outcome.DONE] * 5
    assert p.queue.resent == []
    # And the release gives back the one slot this invocation took, not the other's
    assert [g.slots for g in p.budgets.released] == [1]
    assert p.budgets.in_use["quota#messages#acme"] == 1


def test_a_tenant_with_every_slot_held_elsewhere_is_deferred_entirely_while_others_proceed():
    # Given acme's two slots both held by other invocations, three of its records and one of bravo's
    p = quota_lane()
    p.budgets.in_use["quota#messages#acme"] = 2
    records = [p.record(p.job(f"a-{n}", tenant="acme")) for n in range(3)] + [p.record(p.job("b-0", tenant="bravo"))]
    # When the batch runs
    assert p.run(records) == []
    # Then every acme record is deferred (re-sent, acked, no attempt spent) and bravo's is done
    assert p.outcomes() == [Outcome.DEFERRED] * 3 + [Outcome.DONE]
    assert all(p.outcome(r["messageId"]).detail == {"budget": budget_rules.TENANT_QUOTA} for r in records[:3])
    assert [(e.id, e.attempt, e.deferrals) for e, _ in p.queue.resent] == [(f"a-{n}", 0, 1) for n in range(3)]
    # And acme's holders keep their slots: nothing was taken for it, so nothing is given back for it
    assert [g.budget.key for g in p.budgets.released if g.slots] == ["quota#messages#bravo"]
    assert p.budgets.in_use == {"quota#messages#acme": 2, "quota#messages#bravo": 0}


def test_a_quota_in_observe_mode_with_a_slot_free_counts_nothing():
    # Given a quota being rolled out in observe mode, and three records from one tenant
    p = quota_lane("observe")
    records = [p.record(p.job(f"a-{n}", tenant="acme")) for n in range(3)]
    # When the batch runs
    p.run(records)
    # Then all run and none would have been deferred: one slot was free for the batch
    assert p.outcomes() == [Outcome.DONE] * 3
    assert p.observer.over == []


def test_a_quota_in_observe_mode_with_every_slot_held_defers_nothing_and_counts_each_record():
    # Given an observed quota of two whose slots are both held by other invocations
    p = quota_lane("observe")
    p.budgets.in_use["quota#messages#acme"] = 2
    records = [p.record(p.job(f"a-{n}", tenant="acme")) for n in range(3)]
    # When the batch runs
    p.run(records)
    # Then all three run, and each is counted as one that enforcement would have deferred
    assert p.outcomes() == [Outcome.DONE] * 3
    assert p.queue.resent == []
    assert [message_id for message_id, _ in p.observer.over] == [r["messageId"] for r in records]
    # And the slot observe mode takes anyway (so the counter shows real load) is given back
    assert [g.slots for g in p.budgets.released] == [1]
    assert p.budgets.in_use["quota#messages#acme"] == 2


def test_a_quota_that_cannot_be_read_lets_the_tenants_records_proceed():
    p = quota_lane()
    p.budgets.error = PortDown("state table down")
    p.run([p.record(p.job(f"a-{n}", tenant="acme")) for n in range(3)])
    assert p.outcomes() == [Outcome.DONE] * 3
    assert p.observer.problems == [
        ("tenant quota unavailable; proceeding without it", p.budgets.error, {"tenant": "acme"})
    ]


def test_a_lane_without_a_quota_leases_nothing():
    p = Pipeline()
    p.run([p.record(p.job("a-0"))])
    assert p.budgets.acquired == []
    assert p.budgets.released == []


@pytest.mark.parametrize(("remaining", "outcome"), [(11.4, Outcome.NOT_STARTED), (11.6, Outcome.DONE)])
def test_a_quota_is_taken_only_with_time_to_take_it_give_it_back_and_start_a_record(remaining, outcome):
    p = quota_lane()
    p.calls.previous = 1.0
    p.run([p.record(p.job("a-0"))], remaining)
    assert p.outcomes() == [outcome]
    assert len(p.budgets.acquired) == (outcome == Outcome.DONE)


def test_a_record_deferred_by_its_dependency_budget_spends_no_attempt():
    def holds_vendor(ctx):
        with ctx.dependency():
            return TaskResult(writes=(counter(ctx.envelope.id),))

    budget = budget_rules.dependency("vendor", 1, "enforce")
    p = Pipeline(task=holds_vendor, dependency=budget)
    p.budgets.in_use[budget.key] = 1
    record = p.record(p.job("job-1"), receives=2)
    assert p.run([record]) == []
    assert p.outcomes() == [Outcome.DEFERRED]
    ((envelope, _),) = p.queue.resent
    assert envelope.attempt == 1


def test_a_tenant_without_time_for_its_quota_does_not_hold_up_the_next_tenant():
    # Given two tenants: the first's record is stored elsewhere and needs a call more than the second's
    p = quota_lane()
    p.calls.previous = 1.0
    first = p.job("a-0", tenant="acme")
    by_reference = Envelope(**{**first.__dict__, "payload": None, "ref": "stored-elsewhere"})
    records = [p.record(by_reference), p.record(p.job("b-0", tenant="bravo"))]
    # When the invocation has time for the second tenant's quota and record, not the first's
    p.run(records, 12.5)
    # Then the first is re-sent untouched and the second takes its quota and runs
    assert p.outcomes() == [Outcome.NOT_STARTED, Outcome.DONE]
    assert [b.key for b, _, _ in p.budgets.acquired] == ["quota#messages#bravo"]


def test_a_quota_is_taken_with_exactly_the_time_to_use_it():
    p = quota_lane()
    p.calls.previous = 1.0
    p.run([p.record(p.job("a-0"))], 11.5)
    assert p.outcomes() == [Outcome.DONE]


def test_a_quota_lease_is_held_for_what_the_invocation_has_left_and_its_slack():
    p = Pipeline(
        lane=lane_settings(
            tenant_quota=2, tenant_quota_mode="enforce", timeout_seconds=1.4, task_time_limit_seconds=1.0
        )
    )
    p.run([p.record(p.job("a-0"))], 0.8)
    assert [hold for _, _, hold in p.budgets.acquired] == [pytest.approx(5.8)]


def test_each_tenant_whose_quota_cannot_be_read_is_reported():
    p = quota_lane()
    p.budgets.error = PortDown("state table down")
    p.run([p.record(p.job("a-0", tenant="acme")), p.record(p.job("b-0", tenant="bravo"))])
    assert [(e, f) for _, e, f in p.observer.problems] == [
        (p.budgets.error, {"tenant": "acme"}),
        (p.budgets.error, {"tenant": "bravo"}),
    ]


def test_a_dependency_budget_in_observe_mode_lets_the_call_through_and_reports_it():
    def holds_vendor(ctx):
        with ctx.dependency():
            return TaskResult(writes=(counter(ctx.envelope.id),))

    budget = budget_rules.dependency("vendor", 1, "observe")
    p = Pipeline(task=holds_vendor, dependency=budget)
    p.budgets.in_use[budget.key] = 1
    record = p.record(p.job("job-1"))
    p.run([record])
    assert p.outcomes() == [Outcome.DONE]
    assert [(message_id, grant.over) for message_id, grant in p.observer.over] == [(record["messageId"], 1)]
