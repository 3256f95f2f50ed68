"""Work whose caller has gone is dropped before it costs anything."""

from __future__ import annotations

import time

from pipeline import schema
from pipeline.domain.consumer.marks import marker_key
from tests.unit.consumer.fakes import Recorder
from tests.unit.consumer.handler_output import line_metric_total, log_lines
from tests.unit.consumer.lane_env import internal, with_lane


def test_a_job_past_its_deadline_is_expired_without_a_task_call(lane, capsys, caplog):
    # Given a job whose deadline passed while it waited in the queue
    h = lane("messages")
    h.send(h.job_row("job-stale", {}, tenant="acme", kind="test", deadline=time.time() - 1, queued=1))
    task = Recorder()
    # When the consumer receives it
    response, _ = h.poll(h.handler(tasks={"messages": task}))
    # Then it is acked and counted, the task never runs, and the job says expired
    assert response == {"batchItemFailures": []}
    assert task.calls == []
    row = h.row("jobs", "job-stale")
    assert row["status"] == schema.RowStatus.EXPIRED
    assert schema.PENDING_SHARD not in row
    assert h.state("queued#messages#acme")["queued"] == 0
    assert [line["outcome"] for line in log_lines(caplog) if line["message"].startswith("record")] == ["expired"]
    assert line_metric_total(caplog, "Records", Lane="messages", Outcome="expired") == 1


def test_a_tick_older_than_the_lanes_default_expiry_is_dropped(lane):
    # Given a lane whose work expires 5 s after creation, and a tick created 6 s ago
    h = lane("scheduled")
    h.send(internal("scheduled", "tick-old", "scoring.tick", {}, created_at=time.time() - 6))
    h.send(internal("scheduled", "tick-new", "scoring.tick", {}, created_at=time.time()))
    task = Recorder()
    # When both are received
    h.poll(h.handler(tasks={"scheduled": task}))
    # Then only the fresh one runs; the old one leaves no marker (a redrive may still run it)
    assert task.calls == ["tick-new"]
    assert h.state(marker_key("scheduled", "tick-old")) is None
    assert h.state(marker_key("scheduled", "tick-new")) is not None


def test_work_without_a_deadline_on_a_lane_without_expiry_never_expires(lane):
    h = lane("messages")
    environ = with_lane(h.environ, default_expiry_seconds=None)
    h.send(h.job_row("job-old", {}, tenant="acme", kind="test", created_at=time.time() - 30 * 86400))
    task = Recorder()
    h.poll(h.handler(environ, tasks={"messages": task}))
    assert task.calls == ["job-old"]


def test_a_finished_job_is_a_duplicate_even_past_its_deadline(lane):
    h = lane("messages")
    envelope = h.job_row("job-both", {}, tenant="acme", kind="test", deadline=time.time() - 1)
    h.dynamodb.Table("jobs").update_item(
        Key={schema.ID: "job-both"},
        UpdateExpression="SET #s = :done",
        ExpressionAttributeNames={"#s": "status"},
        ExpressionAttributeValues={":done": schema.RowStatus.DONE},
    )
    h.send(envelope)
    h.poll(h.handler(tasks={"messages": Recorder()}))
    assert h.row("jobs", "job-both")["status"] == schema.RowStatus.DONE


def test_a_job_with_less_time_left_than_its_service_takes_is_dropped_unrun(lane, caplog):
    # Given a lane whose work takes about 10 s, a job due in 4 s and another due in 60 s
    h = lane("messages")
    environ = with_lane(h.environ, service_seconds=10.0)
    h.send(h.job_row("job-too-late", {}, tenant="acme", kind="test", deadline=time.time() + 4, queued=2))
    h.send(h.job_row("job-in-time", {}, tenant="acme", kind="test", deadline=time.time() + 60))
    task = Recorder()
    # When both are received
    h.poll(h.handler(environ, tasks={"messages": task}))
    # Then only the one that can still finish runs; the other is expired, with the time it had
    assert task.calls == ["job-in-time"]
    assert h.row("jobs", "job-too-late")["status"] == schema.RowStatus.EXPIRED
    [line] = [line for line in log_lines(caplog) if line.get("id") == "job-too-late"]
    assert line["outcome"] == "expired"
    assert 3.0 < line["detail"]["time_left"] <= 4.0


def test_a_job_with_more_time_left_than_its_service_takes_is_run(lane):
    h = lane("messages")
    environ = with_lane(h.environ, service_seconds=10.0)
    h.send(h.job_row("job-just", {}, tenant="acme", kind="test", deadline=time.time() + 30))
    task = Recorder()
    h.poll(h.handler(environ, tasks={"messages": task}))
    assert task.calls == ["job-just"]


def test_the_expected_service_time_is_what_this_instance_measured(lane):
    # Given a lane planned at 10 s a record whose tasks really take about 0.2 s
    h = lane("messages")
    environ = with_lane(h.environ, service_seconds=10.0)
    clock = {"now": time.time()}

    def quick(ctx):
        clock["now"] += 0.2
        return Recorder()(ctx)

    handler = h.handler(environ, tasks={"messages": quick}, clock=lambda: clock["now"])
    h.send(h.job_row("job-first", {}, tenant="acme", kind="test", deadline=clock["now"] + 60))
    h.poll(handler)
    # When a job with 4 s left arrives at the same instance
    h.send(h.job_row("job-4s", {}, tenant="acme", kind="test", deadline=clock["now"] + 4))
    h.poll(handler)
    # Then it runs: the measured 0.2 s, not the planned 10 s, is what it must have left
    assert h.row("jobs", "job-4s")["status"] == schema.RowStatus.DONE
