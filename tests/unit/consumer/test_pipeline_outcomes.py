"""The record pipeline's outcomes on in-memory ports: what each kind of record ends as, what the
batch answers, and what the rows and queues show afterwards. Fast, so most changes to
domain/consumer.py are caught here before any test that needs moto runs."""

from __future__ import annotations

import random

import pytest

from pipeline import schema
from pipeline.domain import retry
from pipeline.domain.effects import Put, Table
from pipeline.domain.errors import PermanentError, TransientError
from pipeline.domain.ports import CommitState
from pipeline.domain.work import FollowUp, TaskResult
from pipeline.metric_names import Outcome
from tests.unit.consumer.memory import LANE, NOW
from tests.unit.consumer.pipeline_harness import Pipeline, counter, keyed_put, lane_settings


def raising(exc: BaseException):
    def task(ctx):
        raise exc

    return task


def test_a_queued_job_is_done_acked_and_its_effect_lands_with_the_done_mark():
    # Given a queued job counted in its tenant's queued total
    p = Pipeline()
    record = p.record(p.job("job-1"))
    # When its batch runs
    failures = p.run([record])
    # Then nothing is reported back, the row is done, and its effect landed once with the count
    assert failures == []
    assert p.status("job-1") == schema.RowStatus.DONE
    assert p.effects_of("job-1") == 1
    assert p.outcomes() == [Outcome.DONE]
    outcome = p.outcome(record["messageId"])
    assert (outcome.attempt, dict(outcome.detail)) == (1, {"seen": True})
    decrements = [w for w in p.committer.landed if w.table is Table.STATE]
    assert [w.key[schema.PK] for w in decrements] == ["queued#messages#acme"]
    row = p.store.row(Table.JOBS, "job-1")
    assert (row["attempts"], row["finished_at"], row["updated_at"]) == (1, NOW, NOW)


def test_the_tasks_writes_are_kept_for_the_retention_period_and_carry_the_rows_person():
    # Given a job whose row is about one person (its sender hash), and a task that stores an item
    p = Pipeline(task=lambda ctx: TaskResult(writes=(Put(Table.DATA, {schema.PK: "item", schema.SK: "x"}),)))
    person = "ab" * 16
    record = p.record(p.job("job-p", **{schema.SENDER_HASH: person}))
    # When it runs
    p.run([record])
    # Then the stored item expires with the effects' retention and is indexed by that person
    (item,) = [w for w in p.committer.landed if w.table is Table.DATA]
    assert item.item[schema.TTL] == int(NOW) + 86400
    assert item.item[schema.SENDER_HASH] == person


@pytest.mark.parametrize("value", [None, "not-a-hash"])
def test_a_row_without_a_valid_person_attributes_nothing(value):
    p = Pipeline(task=lambda ctx: TaskResult(writes=(Put(Table.DATA, {schema.PK: "item", schema.SK: "x"}),)))
    fields = {} if value is None else {schema.SENDER_HASH: value}
    p.run([p.record(p.job("job-q", **fields))])
    (item,) = [w for w in p.committer.landed if w.table is Table.DATA]
    assert schema.SENDER_HASH not in item.item


def test_internal_work_is_never_attributed_to_a_person():
    p = Pipeline(task=lambda ctx: TaskResult(writes=(Put(Table.DATA, {schema.PK: "item", schema.SK: "x"}),)))
    p.store.put(Table.STATE, {schema.PK: "unrelated"}, {})
    p.run([p.record(p.tick("tick-1"))])
    (item,) = [w for w in p.committer.landed if w.table is Table.DATA]
    assert schema.SENDER_HASH not in item.item
    assert p.store.marker("tick-1")["outcome"] == Outcome.DONE


def test_a_finished_job_is_acked_as_a_duplicate_without_running_its_task():
    calls = []
    p = Pipeline(task=lambda ctx: calls.append(ctx) or TaskResult())
    record = p.record(p.job("job-d", status=schema.RowStatus.DONE))
    assert p.run([record]) == []
    assert calls == []
    outcome = p.outcome(record["messageId"])
    assert (outcome.outcome, dict(outcome.detail)) == (Outcome.DUPLICATE, {"status": schema.RowStatus.DONE})
    assert outcome.attempt == 1


def test_a_row_that_does_not_exist_is_dead_lettered_with_its_reason():
    p = Pipeline()
    envelope = p.job("job-gone")
    p.store.items.clear()
    record = p.record(envelope)
    assert p.run([record]) == []
    ((body, attributes),) = p.queue.dead
    assert body == record["body"]
    assert attributes["reason"] == "row_missing"
    assert attributes["error"] == "jobs row job-gone does not exist"
    assert attributes["attempts"] == "1"
    assert p.outcomes() == [Outcome.DEAD_LETTERED]


def test_a_permanent_failure_is_dead_lettered_with_every_attribute_and_the_row_marked_failed():
    # Given a job whose task rejects its input, received for the second time
    p = Pipeline(task=raising(PermanentError("bad_input", "x" * 300)))
    record = p.record(p.job("job-bad", tenant="acme", kind="resize"), receives=2)
    # When it runs
    assert p.run([record]) == []
    # Then the original body is parked with why, and the row says failed with the same reason
    ((body, attributes),) = p.queue.dead
    assert body == record["body"]
    assert attributes == {
        "reason": "bad_input",
        "error_class": "PermanentError",
        "error": "x" * 256,
        "attempts": "2",
        "lane": LANE,
        "tenant": "acme",
        "kind": "resize",
        "id": "job-bad",
        "source_message_id": record["messageId"],
    }
    row = p.store.row(Table.JOBS, "job-bad")
    assert row["status"] == schema.RowStatus.FAILED
    assert row["last_error"].startswith("bad_input: xxx")
    assert row["error_class"] == "PermanentError"
    assert (row["attempts"], row["finished_at"], row["updated_at"]) == (2, NOW, NOW)
    assert [w.key[schema.PK] for w in p.committer.landed] == ["queued#messages#acme"]
    outcome = p.outcome(record["messageId"])
    assert (outcome.outcome, outcome.attempt, outcome.error.reason) == (Outcome.DEAD_LETTERED, 2, "bad_input")


def test_a_malformed_body_is_dead_lettered_unchanged_with_no_envelope_fields():
    p = Pipeline()
    record = p.record("not json", receives=3)
    assert p.run([record]) == []
    ((body, attributes),) = p.queue.dead
    assert body == "not json"
    assert attributes["reason"] == "malformed"
    assert attributes["error_class"] == "MalformedEnvelope"
    assert attributes["attempts"] == "3"
    assert (attributes["tenant"], attributes["kind"], attributes["id"]) == ("", "", "")


def test_a_record_for_another_lane_is_dead_lettered_and_not_run():
    calls = []
    p = Pipeline(task=lambda ctx: calls.append(1) or TaskResult())
    other = Pipeline(lane=lane_settings(name="bulk"))
    record = p.record(other.job("job-b"))
    assert p.run([record]) == []
    assert calls == []
    assert p.queue.dead[0][1]["reason"] == "malformed"
    assert "bulk" in p.queue.dead[0][1]["error"]


def test_a_transient_failure_backs_off_through_visibility_and_notes_the_row():
    # Given a job whose dependency answers 503, on its second receive
    p = Pipeline(task=raising(TransientError("503 from vendor")))
    record = p.record(p.job("job-t"), receives=2)
    # When it runs
    failures = p.run([record])
    # Then it is reported back, comes again after the jittered backoff of attempt 2, and the row
    # stays queued with its attempts and last error
    assert failures == [record["messageId"]]
    expected = retry.backoff(2, 2.0, 300.0, random.Random(7))
    assert p.queue.visibility == [(record["receiptHandle"], expected.seconds)]
    outcome = p.outcome(record["messageId"])
    assert outcome.outcome == Outcome.RETRIED
    assert outcome.detail == {"backoff_ceiling": 4.0}
    assert outcome.attempt == 2
    row = p.store.row(Table.JOBS, "job-t")
    assert row["status"] == schema.RowStatus.QUEUED
    assert (row["attempts"], row["last_error"], row["updated_at"]) == (2, "transient: 503 from vendor", NOW)
    assert p.queue.dead == []


def test_a_retry_note_that_cannot_be_written_still_retries_the_record():
    p = Pipeline(task=raising(TransientError("503")))
    p.committer.note_error = ConnectionError("dynamodb down")
    record = p.record(p.job("job-n"))
    assert p.run([record]) == [record["messageId"]]
    assert p.outcomes() == [Outcome.RETRIED]
    assert p.observer.problems == [("retry not noted on the row", p.committer.note_error, {"id": "job-n"})]


def test_internal_work_that_fails_transiently_is_retried_without_a_marker():
    p = Pipeline(task=raising(TransientError("503")))
    record = p.record(p.tick("tick-t"))
    assert p.run([record]) == [record["messageId"]]
    assert p.committer.notes == []
    assert p.store.marker("tick-t") is None


@pytest.mark.parametrize(("receives", "outcome"), [(4, Outcome.RETRIED), (5, Outcome.DEAD_LETTERED)])
def test_a_transient_failure_is_dead_lettered_as_retries_exhausted_on_the_last_attempt(receives, outcome):
    p = Pipeline(task=raising(TransientError("503")))
    record = p.record(p.job("job-x"), receives=receives)
    p.run([record])
    assert p.outcomes() == [outcome]
    if outcome == Outcome.DEAD_LETTERED:
        assert p.queue.dead[0][1]["reason"] == "retries_exhausted"
        assert p.queue.dead[0][1]["error_class"] == "TransientError"
        assert p.status("job-x") == schema.RowStatus.FAILED


def test_attempts_carried_by_a_resent_copy_count_towards_the_last_attempt():
    p = Pipeline(task=raising(TransientError("503")))
    record = p.record(p.job("job-c", attempt=3), receives=2)
    p.run([record])
    assert p.outcomes() == [Outcome.DEAD_LETTERED]
    assert p.queue.dead[0][1]["attempts"] == "5"


def test_a_failed_row_redriven_from_the_dlq_is_finished_done():
    p = Pipeline()
    record = p.record(p.job("job-r", status=schema.RowStatus.FAILED))
    p.run([record])
    assert p.status("job-r") == schema.RowStatus.DONE
    assert [w.table for w in p.committer.landed] == [Table.DATA]  # no second queued decrement


def test_a_task_may_not_write_the_obligation_tables():
    writes = (Put(Table.WEBHOOK_LOG, {schema.ID: "w"}), Put(Table.JOBS, {schema.ID: "other"}))
    p = Pipeline(task=lambda ctx: TaskResult(writes=writes))
    record = p.record(p.job("job-w"))
    p.run([record])
    assert p.queue.dead[0][1]["reason"] == "task_wrote_obligation"
    assert p.queue.dead[0][1]["error"] == "a task may not write jobs, webhook_log"
    assert p.store.row(Table.JOBS, "other") is None


def test_follow_ups_are_sent_before_the_commit_and_a_refused_one_retries_the_record():
    follow = FollowUp(envelope=Pipeline().tick("next"), delay_seconds=5)
    p = Pipeline(task=lambda ctx: TaskResult(writes=(counter(ctx.envelope.id),), follow_ups=(follow,)))
    record = p.record(p.job("job-f"))
    p.run([record])
    assert p.queue.sent == [follow]
    assert p.status("job-f") == schema.RowStatus.DONE

    refused = Pipeline(task=lambda ctx: TaskResult(writes=(counter(ctx.envelope.id),), follow_ups=(follow,)))
    refused.queue.send_error = ConnectionError("sqs down")
    again = refused.record(refused.job("job-f"))
    assert refused.run([again]) == [again["messageId"]]
    assert refused.status("job-f") == schema.RowStatus.QUEUED
    assert refused.committer.landed == []


def test_a_commit_that_fails_retries_the_record_and_lands_nothing():
    p = Pipeline()
    p.committer.error = ConnectionError("dynamodb down")
    record = p.record(p.job("job-cf"))
    assert p.run([record]) == [record["messageId"]]
    assert p.committer.landed == []


def test_skipped_stale_writes_are_reported_on_the_records_line():
    p = Pipeline()
    p.committer.skipped = 2
    record = p.record(p.job("job-s"))
    p.run([record])
    assert p.outcome(record["messageId"]).detail == {"seen": True, "skipped_writes": 2}


def test_a_queued_webhook_whose_writes_are_keyed_is_finished_by_those_writes_alone():
    # Given a queued delivery whose task only stores items idempotent by key
    p = Pipeline(task=lambda ctx: TaskResult(writes=(keyed_put(ctx.envelope.id),), detail={"stored": 1}))
    record = p.record(p.webhook("wh-1"))
    # When it runs
    assert p.run([record]) == []
    # Then those writes are applied on their own; the row is not written and stays queued
    assert len(p.committer.applied) == 1
    assert p.committer.marks == []
    assert p.status("wh-1") == schema.RowStatus.QUEUED
    assert p.outcome(record["messageId"]).outcome == Outcome.DONE
    assert p.outcome(record["messageId"]).detail == {"stored": 1}
    assert p.outcome(record["messageId"]).attempt == 1


@pytest.mark.parametrize(
    ("state", "skipped", "outcome", "detail"),
    [
        (CommitState.DUPLICATE, 1, Outcome.DUPLICATE, {}),
        (CommitState.COMMITTED, 1, Outcome.DONE, {"skipped_writes": 1}),
        (CommitState.COMMITTED, 0, Outcome.DONE, {}),
    ],
)
def test_keyed_writes_that_all_found_their_items_are_a_duplicate(state, skipped, outcome, detail):
    p = Pipeline(task=lambda ctx: TaskResult(writes=(keyed_put(ctx.envelope.id),)))
    p.committer.state = state
    p.committer.skipped = skipped
    record = p.record(p.webhook("wh-2"))
    p.run([record])
    assert p.outcome(record["messageId"]).outcome == outcome
    assert dict(p.outcome(record["messageId"]).detail) == detail


def test_a_webhook_task_that_called_out_keeps_its_done_mark():
    def calls_vendor(ctx):
        ctx.vendor.complete("hi", timeout=1)
        return TaskResult(writes=(keyed_put(ctx.envelope.id),))

    p = Pipeline(task=calls_vendor)
    p.run([p.record(p.webhook("wh-3"))])
    assert p.committer.applied == []
    assert p.status("wh-3") == schema.RowStatus.DONE


def test_the_task_sees_its_record_payload_lane_and_time():
    seen = {}

    def look(ctx):
        seen.update(payload=ctx.payload, lane=ctx.lane, now=ctx.now, option=ctx.option("style", "plain"))
        seen["remaining"] = ctx.remaining()
        seen["read"] = ctx.read(Table.DATA, {schema.PK: "k", schema.SK: "s"})
        seen["hash"] = ctx.sender_hash("+44 7700 900123")
        return TaskResult()

    p = Pipeline(task=look, lane=lane_settings(options={"style": "terse"}))
    p.store.put(Table.DATA, {schema.PK: "k", schema.SK: "s"}, {"v": 1})
    p.run([p.record(p.webhook("wh-4"))])
    assert seen["payload"] == {"n": 2}
    assert (seen["lane"], seen["now"], seen["option"]) == (LANE, NOW, "terse")
    assert 9.0 < seen["remaining"] <= 10.0  # the lane's whole limit: the invocation has plenty
    assert seen["read"] == {schema.PK: "k", schema.SK: "s", "v": 1}
    assert len(seen["hash"]) == 32


def test_the_backoff_ceiling_on_the_records_line_is_rounded_to_milliseconds():
    p = Pipeline(task=raising(TransientError("503")), lane=lane_settings(retry_base_seconds=0.12345))
    record = p.record(p.job("job-t"))
    p.run([record])
    assert p.outcome(record["messageId"]).detail == {"backoff_ceiling": 0.123}
