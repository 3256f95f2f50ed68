"""The record pipeline's use of time and budgets, on in-memory ports: which records it starts with
what the invocation has left, what it drops as too late, and what a tenant's quota defers.

Calls are priced at the slowest one seen (a second here, so the arithmetic reads plainly): a
record needs its own calls and the batch's settling kept back, times 1.5 for headroom."""

from __future__ import annotations

import time

import pytest

from pipeline import schema
from pipeline.domain import budgets as budget_rules
from pipeline.domain.consumer import ConsumerConfig
from pipeline.domain.effects import Table
from pipeline.domain.envelope import Envelope
from pipeline.domain.errors import DependencyBusy, TransientError
from pipeline.domain.work import TaskResult
from pipeline.metric_names import Outcome
from tests.unit.consumer.memory import LANE, NOW, Pipeline, PortDown, Remaining, counter, lane_settings


def slow_calls(**changes) -> Pipeline:
    """A consumer whose previous invocation saw a call take a second."""
    p = Pipeline(**changes)
    p.calls.previous = 1.0
    return p


@pytest.mark.parametrize(
    ("timeout", "limit", "reserve", "least_start"),
    [(30, 10, 1.0, 1.0), (10.6, 10, 0.3, 1.0), (10.1, 10, 0.1, 1.0), (2.6, 2, 0.3, 0.3), (30, 0.5, 1.0, 0.5)],
)
def test_the_reserve_and_the_shortest_worthwhile_start_follow_the_lanes_limits(timeout, limit, reserve, least_start):
    config = ConsumerConfig(
        lane=lane_settings(timeout_seconds=timeout, task_time_limit_seconds=limit),
        dependency=None,
        marker_ttl_seconds=1,
        effects_retention_seconds=1,
    )
    assert config.reserve_seconds == pytest.approx(reserve)
    assert config.least_start_seconds == pytest.approx(least_start)


@pytest.mark.parametrize(
    ("remaining", "looked_up", "outcome"),
    [(5.9, 0, Outcome.NOT_STARTED), (8.4, 1, Outcome.NOT_STARTED), (8.6, 1, Outcome.DONE)],
)
def test_a_record_starts_only_if_its_calls_and_the_settling_still_fit(remaining, looked_up, outcome):
    # Given calls taking a second: the lookup needs 6 s kept (its call and the settle's three),
    # the task 7.5 s kept after it (two calls and three) plus the shortest worthwhile start, 1 s
    p = slow_calls()
    record = p.record(p.job("job-1"))
    # When the invocation has `remaining` seconds
    failures = p.run([record], remaining)
    # Then the record is run, or re-sent untouched and acked
    assert failures == []
    assert p.store.lookups == looked_up
    assert p.outcomes() == [outcome]
    if outcome == Outcome.NOT_STARTED:
        ((envelope, delay),) = p.queue.resent
        assert (envelope.id, envelope.attempt, envelope.deferrals, delay) == ("job-1", 0, 1, 0)
        assert p.outcome(record["messageId"]).attempt == 1
        assert p.outcome(record["messageId"]).detail == {"remaining_seconds": remaining}
        assert p.status("job-1") == schema.RowStatus.QUEUED


def test_a_task_runs_under_what_the_invocation_has_left_less_the_reserve():
    seen = []
    p = slow_calls(task=lambda ctx: seen.append(ctx.remaining()) or TaskResult())
    p.run([p.record(p.job("job-1"))], 9.0)
    assert 1.3 < seen[0] <= 1.5


def test_a_record_whose_payload_is_in_another_row_keeps_a_call_more_back():
    p = slow_calls()
    envelope = p.job("job-ref")
    by_reference = Envelope(**{**envelope.__dict__, "payload": None, "ref": "stored-elsewhere"})
    p.run([p.record(by_reference)], 9.9)
    p.run([p.record(by_reference)], 10.1)
    assert p.outcomes() == [Outcome.NOT_STARTED, Outcome.DONE]


def test_the_calls_of_this_invocation_count_as_well_as_the_last_ones():
    p = Pipeline()
    p.calls.slowest_now = 2.0
    p.run([p.record(p.job("job-1"))], 11.9)
    assert p.store.lookups == 0
    p.run([p.record(p.job("job-2"))], 17.1)
    assert p.outcomes() == [Outcome.NOT_STARTED, Outcome.DONE]


def test_with_fast_calls_the_lanes_own_reserve_is_what_is_kept():
    p = Pipeline()
    p.run([p.record(p.job("job-1"))], 0.99)
    assert p.store.lookups == 0
    p.run([p.record(p.job("job-2"))], 1.99)
    p.run([p.record(p.job("job-3"))], 2.01)
    assert p.outcomes() == [Outcome.NOT_STARTED, Outcome.NOT_STARTED, Outcome.DONE]


def test_more_records_to_resend_keep_more_time_back():
    # Eleven records take two re-send calls, not one: 7.5 s kept before the lookup
    p = slow_calls()
    records = [p.record(p.job(f"job-{n}")) for n in range(11)]
    p.run(records, 7.4)
    assert p.store.lookups == 0
    assert len(p.queue.resent) == 11
    p.run([p.record(p.job(f"more-{n}")) for n in range(11)], 7.6)
    assert p.store.lookups == 1


@pytest.mark.parametrize(("remaining", "outcome"), [(7.4, Outcome.NOT_STARTED), (7.6, Outcome.DEAD_LETTERED)])
def test_a_missing_row_is_dead_lettered_only_with_time_for_its_two_calls(remaining, outcome):
    p = slow_calls()
    envelope = p.job("job-gone")
    p.store.items.clear()
    record = p.record(envelope, receives=2)
    p.run([record], remaining)
    assert p.outcomes() == [outcome]
    assert p.outcome(record["messageId"]).attempt == 2
    if outcome == Outcome.NOT_STARTED:
        assert p.outcome(record["messageId"]).detail == {"remaining_seconds": remaining}


@pytest.mark.parametrize(("remaining", "outcome"), [(7.4, Outcome.NOT_STARTED), (7.6, Outcome.EXPIRED)])
def test_a_late_record_is_expired_only_with_time_for_its_commit(remaining, outcome):
    p = slow_calls()
    record = p.record(p.job("late", deadline=NOW - 1), receives=2)
    p.run([record], remaining)
    assert p.outcomes() == [outcome]
    assert p.outcome(record["messageId"]).attempt == 2
    if outcome == Outcome.NOT_STARTED:
        assert p.outcome(record["messageId"]).detail == {"remaining_seconds": remaining}


def test_records_before_the_time_ran_short_keep_their_outcome():
    # Given calls priced at a second, 10 s left, and tasks that take 2 s each
    left = Remaining(10.0)

    def two_seconds(ctx):
        left.seconds -= 2.0
        return TaskResult(writes=(counter(ctx.envelope.id),))

    p = slow_calls(task=two_seconds)
    records = [p.record(p.job(f"job-{n}")) for n in range(3)]
    # When the batch runs, the second record would not leave 7.5 s kept and a 1 s start
    assert p.run(records, left) == []
    # Then the first is done and the two others are re-sent untouched
    assert p.outcomes() == [Outcome.DONE, Outcome.NOT_STARTED, Outcome.NOT_STARTED]
    assert [e.id for e, _ in p.queue.resent] == ["job-1", "job-2"]


@pytest.mark.parametrize(("remaining", "reported"), [(0.05, 0.05), (-1.0, 0.0)])
def test_an_invocation_out_of_time_is_reported_with_what_it_had_left(remaining, reported):
    p = Pipeline()
    records = [p.record(p.job("job-1")), p.record(p.job("job-2"))]
    p.run(records, remaining)
    assert p.observer.late == [(2, reported)]
    assert p.outcomes() == [Outcome.NOT_STARTED, Outcome.NOT_STARTED]


def test_an_out_of_time_report_that_fails_is_noted_as_a_problem():
    p = Pipeline()
    failure = RuntimeError("metrics down")
    p.observer.out_of_time = lambda records, seconds: (_ for _ in ()).throw(failure)
    p.run([p.record(p.job("job-1"))], 0.05)
    assert p.observer.problems == [("out of time, and not reported", failure, {})]


def test_a_task_stopped_by_the_end_of_the_invocation_is_resent_without_an_attempt():
    # Given a lane with a one-second limit, an invocation with 0.7 s left, and a slower task
    def slow(ctx):
        time.sleep(0.6)
        return TaskResult()

    p = Pipeline(task=slow, lane=lane_settings(timeout_seconds=1.4, task_time_limit_seconds=1.0))
    record = p.record(p.job("job-cut"), receives=2)
    # When it runs out of the time it was given
    assert p.run([record], 0.7) == []
    # Then it is re-sent at once, carrying only its earlier receive, and acked
    outcome = p.outcome(record["messageId"])
    assert (outcome.outcome, dict(outcome.detail)) == (Outcome.CUT_SHORT, {"limit_seconds": 0.325})
    assert outcome.attempt == 2
    ((envelope, delay),) = p.queue.resent
    assert (envelope.attempt, delay) == (1, 0)


def test_a_task_past_its_own_limit_is_retried_as_a_timeout():
    def slow(ctx):
        time.sleep(0.5)
        return TaskResult()

    p = Pipeline(task=slow, lane=lane_settings(task_time_limit_seconds=0.2))
    record = p.record(p.job("job-slow"))
    assert p.run([record]) == [record["messageId"]]
    error = p.outcome(record["messageId"]).error
    assert error.reason == "task_timeout"
    assert error.message.startswith("messages:test did not finish within its 0.2 s limit")
    row = p.store.row(Table.JOBS, "job-slow")
    assert (row["status"], row["attempts"]) == (schema.RowStatus.QUEUED, 1)
    assert row["last_error"].startswith("task_timeout: messages:test did not finish")


@pytest.mark.parametrize(("deadline", "outcome"), [(NOW + 5, Outcome.DONE), (NOW + 4.9, Outcome.EXPIRED)])
def test_work_with_less_time_before_its_deadline_than_its_service_takes_is_dropped_unrun(deadline, outcome):
    calls = []
    p = Pipeline(task=lambda ctx: calls.append(1) or TaskResult(), lane=lane_settings(service_seconds=5.0))
    record = p.record(p.job("job-1", deadline=deadline))
    p.run([record])
    assert p.outcomes() == [outcome]
    assert len(calls) == (outcome == Outcome.DONE)
    if outcome == Outcome.EXPIRED:
        assert p.outcome(record["messageId"]).detail == {"time_left": 4.9}
        assert p.status("job-1") == schema.RowStatus.EXPIRED
        assert [w.key[schema.PK] for w in p.committer.landed] == ["queued#messages#acme"]


def test_work_past_its_deadline_is_expired_with_no_time_left_to_report():
    p = Pipeline()
    record = p.record(p.job("late", deadline=NOW - 3))
    p.run([record])
    assert p.outcome(record["messageId"]).detail == {}
    assert p.outcome(record["messageId"]).attempt == 1


def test_the_expected_service_time_is_what_this_instance_measured():
    # Given a kind the catalogue expects to take 5 s, which this instance has seen take no time
    p = Pipeline(lane=lane_settings(service_seconds=5.0))
    p.run([p.record(p.job("first"))])
    # When a job with 1 s left arrives, it is run, not dropped
    p.run([p.record(p.job("second", deadline=NOW + 1))])
    assert p.outcomes() == [Outcome.DONE, Outcome.DONE]


def test_internal_work_older_than_the_lanes_default_expiry_is_dropped_without_a_marker():
    p = Pipeline(lane=lane_settings(default_expiry_seconds=60.0))
    old = Envelope(
        id="tick-old", lane=LANE, tenant="system", kind="test", source="internal", created_at=NOW - 61, payload={}
    )
    fresh = Envelope(
        id="tick-new", lane=LANE, tenant="system", kind="test", source="internal", created_at=NOW - 59, payload={}
    )
    p.run([p.record(old), p.record(fresh)])
    assert p.outcomes() == [Outcome.EXPIRED, Outcome.DONE]
    assert p.store.marker("tick-old") is None
    assert p.committer.marks[0].item[schema.PK] == "done#messages#tick-new"


def quota_lane(mode: str = "enforce") -> Pipeline:
    return Pipeline(lane=lane_settings(tenant_quota=2, tenant_quota_mode=mode))


def test_a_tenant_over_its_quota_has_its_latest_records_deferred_while_others_proceed():
    # Given a lane allowing two records a tenant at once, three from acme and one from bravo
    p = quota_lane()
    records = [p.record(p.job(f"a-{n}", tenant="acme")) for n in range(3)] + [p.record(p.job("b-0", tenant="bravo"))]
    # When the batch runs with 30 s left
    assert p.run(records) == []
    # Then acme's latest is deferred (re-sent, acked, no attempt spent), the rest are done
    assert p.outcomes() == [Outcome.DONE, Outcome.DONE, Outcome.DEFERRED, Outcome.DONE]
    assert p.outcome(records[2]["messageId"]).detail == {"budget": budget_rules.TENANT_QUOTA}
    assert [e.id for e, _ in p.queue.resent] == ["a-2"]
    # And each tenant's slots were leased for the invocation and its slack, then given back
    assert [(b.key, slots, hold) for b, slots, hold in p.budgets.acquired] == [
        ("quota#messages#acme", 3, 35.0),
        ("quota#messages#bravo", 1, 35.0),
    ]
    assert [g.budget.key for g in p.budgets.released] == ["quota#messages#acme", "quota#messages#bravo"]
    assert set(p.budgets.in_use.values()) == {0}


def test_a_tenant_with_its_quota_in_use_elsewhere_is_deferred_entirely():
    p = quota_lane()
    p.budgets.in_use["quota#messages#acme"] = 2
    p.run([p.record(p.job(f"a-{n}", tenant="acme")) for n in range(2)])
    assert p.outcomes() == [Outcome.DEFERRED, Outcome.DEFERRED]


def test_a_quota_in_observe_mode_defers_nothing_and_counts_what_it_would_have():
    p = quota_lane("observe")
    records = [p.record(p.job(f"a-{n}", tenant="acme")) for n in range(3)]
    p.run(records)
    assert p.outcomes() == [Outcome.DONE] * 3
    assert [message_id for message_id, _ in p.observer.over] == [records[2]["messageId"]]


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


@pytest.mark.parametrize(("remaining", "looked_up"), [(5.99, 0), (6.0, 1)])
def test_the_lookup_is_made_with_exactly_its_own_call_and_the_settling_kept_back(remaining, looked_up):
    p = slow_calls()
    p.run([p.record(p.job("job-1"))], remaining)
    assert p.store.lookups == looked_up
    assert p.outcomes() == [Outcome.NOT_STARTED]


def test_a_record_starts_with_exactly_the_shortest_worthwhile_limit():
    seen = []
    p = slow_calls(task=lambda ctx: seen.append(ctx.remaining()) or TaskResult())
    p.run([p.record(p.job("job-1"))], 8.5)
    assert p.outcomes() == [Outcome.DONE]
    assert 0.9 < seen[0] <= 1.0


def test_a_missing_row_is_dead_lettered_with_exactly_the_time_for_its_calls():
    p = slow_calls()
    envelope = p.job("job-gone")
    p.store.items.clear()
    p.run([p.record(envelope)], 7.5)
    assert p.outcomes() == [Outcome.DEAD_LETTERED]


@pytest.mark.parametrize(("remaining", "outcome"), [(9.9, Outcome.NOT_STARTED), (10.5, Outcome.DEFERRED)])
def test_records_already_deferred_count_as_re_sends_still_to_make(remaining, outcome):
    # Given eleven records a busy dependency defers: whatever is taken, two re-send calls remain
    def busy(ctx):
        raise DependencyBusy("vendor at its limit")

    p = slow_calls(task=busy)
    records = [p.record(p.job(f"job-{n}")) for n in range(11)]
    # When the invocation has 9.9 s (under the 10 s each start needs) or 10.5 s
    p.run(records, remaining)
    # Then none starts, or every one does and is deferred
    assert p.outcomes() == [outcome] * 11


def test_records_already_failed_count_as_visibility_changes_still_to_make():
    # Given eleven records that fail transiently, the first one taking the invocation to 9.5 s
    left = Remaining(10.0)

    def fails(ctx):
        left.seconds = 9.5
        raise TransientError("503")

    p = slow_calls(task=fails)
    records = [p.record(p.job(f"job-{n}")) for n in range(11)]
    # When the batch runs: each start needs 8.5 s, but the eleventh would make ten visibility
    # changes plus its own, two calls, and needs 10 s
    p.run(records, left)
    # Then ten are retried and the last is re-sent untouched
    assert p.outcomes() == [Outcome.RETRIED] * 10 + [Outcome.NOT_STARTED]


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


@pytest.mark.parametrize(
    ("deadline", "detail"), [(NOW + 0.5, {"time_left": 0.5}), (NOW + 0.12345, {"time_left": 0.123}), (NOW, {})]
)
def test_an_expired_record_reports_the_time_it_had_left(deadline, detail):
    p = Pipeline(lane=lane_settings(service_seconds=5.0))
    job = p.record(p.job("job-1", deadline=deadline))
    tick = p.record(p.tick("tick-1", deadline=deadline))
    p.run([job, tick])
    assert p.outcomes() == [Outcome.EXPIRED, Outcome.EXPIRED]
    for record in (job, tick):
        assert dict(p.outcome(record["messageId"]).detail) == detail
        assert p.outcome(record["messageId"]).attempt == 1
    row = p.store.row(Table.JOBS, "job-1")
    assert (row["status"], row["finished_at"], row["updated_at"], row["attempts"]) == ("expired", NOW, NOW, 1)
