"""The record pipeline when a port fails, on in-memory ports: nothing is lost, nothing raises out
of the batch, and every record still gets exactly one answer. The same paths are pinned against
moto in test_degraded.py."""

from __future__ import annotations

from pipeline import schema
from pipeline.domain.consumer.work import TaskResult
from pipeline.domain.dependencies import budgets as budget_rules
from pipeline.domain.effects import Table
from pipeline.domain.errors import DependencyBusy, PermanentError, TransientError
from pipeline.domain.ports import CommitState
from pipeline.metric_names import Outcome
from tests.unit.consumer.memory import NOW, PortDown
from tests.unit.consumer.pipeline_harness import Pipeline, counter, lane_settings


def busy(ctx):
    raise DependencyBusy("vendor at its limit")


def test_a_deferral_the_queue_refuses_is_reported_back_with_the_deferral_delay():
    # Given two records deferred by a busy dependency, and a queue that refuses the second re-send
    p = Pipeline(task=busy)
    first, second = p.record(p.job("job-1")), p.record(p.job("job-2"))
    p.queue.refuse = {1}
    # When the batch settles
    failures = p.run([first, second])
    # Then the re-sent one is acked; the refused one stays in the queue, back after its delay
    assert failures == [second["messageId"]]
    assert [envelope.id for envelope, _ in p.queue.resent] == ["job-1"]
    (resent_delay,) = [delay for _, delay in p.queue.resent]
    assert 30 <= resent_delay <= 45
    ((handle, seconds),) = p.queue.visibility
    assert handle == second["receiptHandle"]
    assert 30 <= seconds <= 45
    refused = p.outcome(second["messageId"])
    assert (refused.outcome, refused.failed, refused.defer_seconds) == (Outcome.DEFERRED, True, None)


def test_when_the_queue_refuses_every_deferral_none_is_acked():
    p = Pipeline(task=busy)
    records = [p.record(p.job(f"job-{n}")) for n in range(3)]
    p.queue.defer_error = PortDown("sqs unreachable")
    failures = p.run(records)
    assert failures == [r["messageId"] for r in records]
    assert sorted(h for h, _ in p.queue.visibility) == sorted(r["receiptHandle"] for r in records)
    assert p.observer.problems == [("deferrals not re-sent", p.queue.defer_error, {"count": 3})]
    assert [p.status(f"job-{n}") for n in range(3)] == [schema.RowStatus.QUEUED] * 3


def test_a_deferral_is_resent_with_its_receives_carried_and_one_more_deferral():
    p = Pipeline(task=busy)
    record = p.record(p.job("job-d", attempt=1, deferrals=2), receives=3)
    assert p.run([record]) == []
    ((envelope, delay),) = p.queue.resent
    assert (envelope.id, envelope.attempt, envelope.deferrals) == ("job-d", 3, 3)
    assert p.outcome(record["messageId"]).detail == {"budget": budget_rules.DEPENDENCY}
    assert p.outcome(record["messageId"]).attempt == 4
    assert p.outcome(record["messageId"]).defer_seconds == delay


def test_a_lane_without_a_defer_time_resends_at_once():
    p = Pipeline(task=busy, lane=lane_settings(defer_seconds=0))
    p.run([p.record(p.job("job-0"))])
    assert [delay for _, delay in p.queue.resent] == [0]


def test_a_failed_dead_letter_send_keeps_the_record_in_the_lane_and_the_row_open():
    # Given a poison job, and a DLQ that cannot be reached
    p = Pipeline(task=lambda ctx: (_ for _ in ()).throw(PermanentError("bad_input", "no")))
    record = p.record(p.job("job-p"), receives=2)
    p.queue.dead_letter_error = PortDown("dlq unreachable")
    # When it fails
    failures = p.run([record])
    # Then it is not acked: it comes back after a backoff, its row still open
    assert failures == [record["messageId"]]
    outcome = p.outcome(record["messageId"])
    assert outcome.outcome == Outcome.RETRIED
    assert outcome.detail == {"dead_letter_failed": "bad_input"}
    assert outcome.error.error_class == "PortDown"
    assert outcome.attempt == 2
    assert outcome.visibility_seconds is not None
    assert p.queue.visibility == [(record["receiptHandle"], outcome.visibility_seconds)]
    assert p.status("job-p") == schema.RowStatus.QUEUED
    assert p.committer.marks == []


def test_a_dead_lettered_row_that_cannot_be_marked_is_still_dead_lettered_and_acked():
    p = Pipeline(task=lambda ctx: (_ for _ in ()).throw(PermanentError("bad_input", "no")))
    p.committer.error = PortDown("dynamodb down")
    record = p.record(p.job("job-m"))
    assert p.run([record]) == []
    assert len(p.queue.dead) == 1
    assert p.observer.problems == [("dead-lettered row not marked failed", p.committer.error, {"id": "job-m"})]


def test_an_internal_record_dead_lettered_leaves_no_marker():
    p = Pipeline(task=lambda ctx: (_ for _ in ()).throw(PermanentError("bad_input", "no")))
    p.run([p.record(p.tick("tick-p"))])
    assert len(p.queue.dead) == 1
    assert p.store.marker("tick-p") is None
    assert p.committer.marks == []


def test_of_two_copies_of_a_tick_racing_only_one_commits_its_writes():
    # Given two copies of one tick, both past the done-check, the second committing after the first
    first = Pipeline()
    second = Pipeline(store=first.store, committer=first.committer)
    tick = first.tick("tick-r")
    copy_a, copy_b = first.record(tick), second.record(tick)
    first.committer.before_commit = lambda: second.run([copy_b])
    # When both run
    failures = first.run([copy_a])
    # Then both are acked; one is done, the other a duplicate, and the effect landed once
    assert failures == []
    assert sorted(first.outcomes() + second.outcomes()) == [Outcome.DONE, Outcome.DUPLICATE]
    assert first.effects_of("tick-r") == 1
    assert first.store.marker("tick-r")["outcome"] == Outcome.DONE


def test_a_superseded_result_commits_only_its_mark_and_says_superseded():
    # Given a tick whose task found newer work that makes its result moot
    p = Pipeline(task=lambda ctx: TaskResult(writes=(counter(ctx.envelope.id),), superseded=True))
    record = p.record(p.tick("tick-s"))
    # When it runs
    assert p.run([record]) == []
    # Then its writes do not land, and its marker says superseded, not done
    assert p.effects_of("tick-s") == 0
    assert p.store.marker("tick-s")["outcome"] == Outcome.SUPERSEDED
    assert p.outcomes() == [Outcome.SUPERSEDED]


def test_a_result_superseded_at_commit_says_superseded():
    p = Pipeline()
    p.committer.state = CommitState.SUPERSEDED
    record = p.record(p.job("job-s"))
    p.run([record])
    assert p.outcomes() == [Outcome.SUPERSEDED]
    assert p.effects_of("job-s") == 0


def test_the_drain_count_is_every_record_taken_off_the_lane_for_good():
    # Given a batch: two done, a duplicate, a dead letter, an expiry, a retry and a deferral
    def task(ctx):
        if ctx.envelope.id == "retry":
            raise TransientError("503")
        if ctx.envelope.id == "defer":
            raise DependencyBusy("busy")
        return TaskResult(writes=(counter(ctx.envelope.id),))

    p = Pipeline(task=task)
    p.clock.now = NOW + 100
    records = [
        p.record(p.job("done-1")),
        p.record(p.job("done-2")),
        p.record(p.job("dup", status=schema.RowStatus.DONE)),
        p.record("not json"),
        p.record(p.job("late", deadline=NOW)),
        p.record(p.job("retry")),
        p.record(p.job("defer")),
    ]
    # When it runs
    p.run(records)
    # Then five left the lane for good, counted once at the batch's time
    assert p.drain.counts == [(5, NOW + 100)]
    assert p.status("late") == schema.RowStatus.EXPIRED


def test_a_drain_count_that_cannot_be_recorded_does_not_fail_the_batch():
    p = Pipeline()
    p.drain.error = PortDown("state table down")
    record = p.record(p.job("job-1"))
    assert p.run([record]) == []
    assert p.observer.problems == [("drain count not recorded", p.drain.error, {"drained": 1})]


def test_a_batch_that_fails_outside_any_record_reports_every_unsettled_record_for_retry():
    # Given a batch whose bookkeeping breaks after its first record settled
    p = Pipeline(lane=lane_settings(tenant_quota=5, tenant_quota_mode="observe"))
    p.budgets.in_use[budget_rules.tenant_quota("messages", "acme", 5, "observe").key] = 5
    p.observer.over_budget_error = RuntimeError("a bug outside any record")
    malformed = p.record("not json")
    records = [malformed, p.record(p.job("job-1", tenant="acme")), p.record(p.job("job-2", tenant="acme"))]
    # When it runs, nothing raises
    failures = p.run(records)
    # Then the settled record keeps its outcome and every other record goes back to the queue
    assert failures == [r["messageId"] for r in records[1:]]
    assert p.outcomes() == [Outcome.DEAD_LETTERED, Outcome.RETRIED, Outcome.RETRIED]
    unsettled = p.outcome(records[1]["messageId"])
    assert unsettled.error.error_class == "Unsettled"
    assert (unsettled.error.reason, unsettled.error.message) == (
        "unexpected",
        "batch failed before this record settled",
    )
    assert unsettled.error.transient
    assert unsettled.attempt == 1
    assert unsettled.visibility_seconds is None
    assert p.queue.visibility == []
    assert p.observer.problems == [("batch failed outside any record", p.observer.over_budget_error, {})]
    assert p.drain.counts == [(1, NOW)]
    assert [p.status("job-1"), p.status("job-2")] == [schema.RowStatus.QUEUED] * 2


def test_when_the_obligations_cannot_be_read_every_record_is_retried_and_none_run():
    calls = []
    p = Pipeline(task=lambda ctx: calls.append(1) or TaskResult())
    p.store.lookup_error = PortDown("dynamodb down")
    records = [p.record(p.job(f"job-{n}")) for n in range(3)]
    assert p.run(records) == [r["messageId"] for r in records]
    assert calls == []
    assert p.committer.notes == []  # no row was read, so none is noted
    assert len(p.queue.visibility) == 3


def test_when_the_obligations_read_is_refused_as_bad_input_every_record_is_dead_lettered():
    p = Pipeline()
    p.store.lookup_error = PermanentError("aws_rejected_input", "ValidationException")
    records = [p.record(p.job(f"job-{n}")) for n in range(2)]
    assert p.run(records) == []
    assert len(p.queue.dead) == 2
    assert p.committer.marks == []


def test_visibility_changes_that_fail_or_are_refused_are_reported_and_the_batch_still_answers():
    p = Pipeline(task=lambda ctx: (_ for _ in ()).throw(TransientError("503")))
    p.queue.visibility_error = PortDown("sqs down")
    record = p.record(p.job("job-v"))
    assert p.run([record]) == [record["messageId"]]
    assert p.observer.problems == [
        ("visibility not changed; messages return after the queue's timeout", p.queue.visibility_error, {})
    ]

    refused = Pipeline(task=lambda ctx: (_ for _ in ()).throw(TransientError("503")))
    refused.queue.visibility_refused = 1
    again = refused.record(refused.job("job-v"))
    assert refused.run([again]) == [again["messageId"]]
    assert refused.observer.problems == [("some visibility changes were refused", None, {"refused": 1})]


def test_a_record_without_a_receipt_handle_gets_no_visibility_change():
    p = Pipeline(task=lambda ctx: (_ for _ in ()).throw(TransientError("503")))
    record = p.record(p.job("job-h"), handle=False)
    assert p.run([record]) == [record["messageId"]]
    assert p.queue.visibility == []


def test_an_expiry_whose_commit_fails_is_retried():
    p = Pipeline()
    p.committer.error = PortDown("dynamodb down")
    record = p.record(p.job("late", deadline=NOW - 1))
    assert p.run([record]) == [record["messageId"]]
    assert p.status("late") == schema.RowStatus.QUEUED
    outcome = p.outcome(record["messageId"])
    assert (outcome.outcome, outcome.error.error_class, outcome.attempt) == (Outcome.RETRIED, "PortDown", 1)
    assert p.queue.visibility == [(record["receiptHandle"], outcome.visibility_seconds)]
    assert outcome.visibility_seconds is not None
    assert "dynamodb down" in p.store.row(Table.JOBS, "late")["last_error"]  # noted for GET /jobs/{id}


def test_an_expiry_that_finds_the_row_finished_is_a_duplicate():
    p = Pipeline()
    record = p.record(p.job("late", deadline=NOW - 1))
    p.committer.before_commit = lambda: p.store.put(Table.JOBS, {schema.ID: "late"}, {"status": "done"})
    p.run([record])
    assert p.outcomes() == [Outcome.DUPLICATE]
    assert p.outcome(record["messageId"]).attempt == 1
