"""The record pipeline's use of time, on in-memory ports: which records it starts with what the
invocation has left, which it re-sends untouched, and what it reports when time runs out anyway.

Calls are priced at the slowest one seen (a second here, so the arithmetic reads plainly): a
record needs its own calls and the batch's settling kept back, times 1.5 for headroom."""

from __future__ import annotations

import time

import pytest

from pipeline import schema
from pipeline.domain.consumer.batch import ConsumerConfig
from pipeline.domain.consumer.work import TaskResult
from pipeline.domain.effects import Table
from pipeline.domain.envelope import Envelope
from pipeline.domain.errors import DependencyBusy, TransientError
from pipeline.metric_names import Outcome
from tests.unit.consumer.memory import NOW
from tests.unit.consumer.pipeline_harness import Pipeline, Remaining, counter, lane_settings


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


@pytest.mark.parametrize(("remaining", "outcome"), [(7.4, Outcome.NOT_STARTED), (7.6, Outcome.EXPIRED)])
def test_a_late_record_is_expired_only_with_time_for_its_commit(remaining, outcome):
    p = slow_calls()
    record = p.record(p.job("late", deadline=NOW - 1), receives=2)
    p.run([record], remaining)
    assert p.outcomes() == [outcome]
    assert p.outcome(record["messageId"]).attempt == 2
    if outcome == Outcome.NOT_STARTED:
        assert p.outcome(record["messageId"]).detail == {"remaining_seconds": remaining}
