"""The record pipeline's deadlines, on in-memory ports: work too late to be worth starting is
dropped unrun, its row marked expired, with the time it had left on its record's line."""

from __future__ import annotations

import pytest

from pipeline import schema
from pipeline.domain.consumer.work import TaskResult
from pipeline.domain.effects import Table
from pipeline.domain.envelope import Envelope
from pipeline.metric_names import Outcome
from tests.unit.consumer.memory import LANE, NOW
from tests.unit.consumer.pipeline_harness import Pipeline, lane_settings


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


@pytest.mark.parametrize("source", ["webhook", "job"])
def test_a_row_past_its_retention_is_settled_as_expired_without_running_its_task(source):
    # Given a row whose retention ran out (a DLQ redrive a day after TTL should have deleted it),
    # running its task would store the person's data for another full effects retention.
    calls = []
    p = Pipeline(task=lambda ctx: calls.append(ctx.envelope.id) or TaskResult())
    envelope = (p.webhook if source == "webhook" else p.job)("old", **{schema.TTL: int(NOW) - 1})
    record = p.record(envelope)
    p.run([record])
    assert p.outcomes() == [Outcome.EXPIRED]
    assert calls == []
    assert p.status("old") == schema.RowStatus.EXPIRED


def test_a_row_within_its_retention_runs_as_usual():
    calls = []
    p = Pipeline(task=lambda ctx: calls.append(ctx.envelope.id) or TaskResult())
    p.run([p.record(p.job("fresh", **{schema.TTL: int(NOW) + 1}))])
    assert p.outcomes() == [Outcome.DONE]
    assert calls == ["fresh"]
