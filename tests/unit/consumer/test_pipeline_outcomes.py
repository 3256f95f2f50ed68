"""The record pipeline's successes on in-memory ports: what a record that runs ends as, what its
commit writes, and what the rows and queues show afterwards (failures: test_pipeline_failures.py).
Fast, so most changes to domain/consumer/batch.py and domain/consumer/task_step.py are caught here before any test
that needs moto runs."""

from __future__ import annotations

import pytest

from pipeline import schema
from pipeline.domain.consumer.work import FollowUp, TaskResult
from pipeline.domain.effects import Put, Table
from pipeline.domain.ports import CommitState
from pipeline.metric_names import Outcome
from tests.unit.consumer.memory import LANE, NOW
from tests.unit.consumer.pipeline_harness import Pipeline, counter, keyed_put, lane_settings


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
