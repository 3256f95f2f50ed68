"""Lost work is replayed once; late work is left alone (see test_backlog.py for lanes at load)."""

from __future__ import annotations

import pytest

from pipeline import metric_names, schema
from pipeline.domain.webhook.routing import WEBHOOK_LANES
from stacks.config.environments import ENVIRONMENTS

from .conftest import metric

GRACE = 8  # the local environment's sweeper settings
PATIENCE = 30
CAP = 600


def test_lost_enqueue_is_replayed_once_on_the_next_sweep(rows, queues, sweep, clock):
    # Given a webhook row whose enqueue failed after the write: pending, and nothing on its lane
    rows.webhook("wh-lost", lane="messages", tenant="waba-7", age=GRACE + 1, attempts=2)
    assert queues.depth("messages") == 0

    # When the sweeper runs
    report = sweep()

    # Then its message is on the lane once, rebuilt from the row, and the replay is recorded
    assert report["webhook"]["replayed"] == 1
    [envelope] = queues.drain("messages")
    assert (envelope.id, envelope.lane, envelope.tenant) == ("wh-lost", "messages", "waba-7")
    assert envelope.source == "webhook"
    assert envelope.ref == "wh-lost"
    assert envelope.attempt == 2  # the failed attempts the row records go with it
    row = rows.get("webhook", "wh-lost")
    assert row["replays"] == 1
    assert row["replayed_at"] == clock.now

    # And once the consumer has finished it, later sweeps leave nothing behind
    rows.finish("webhook", "wh-lost")
    clock.advance(PATIENCE * 4)
    assert sweep()["webhook"]["replayed"] == 0
    assert queues.depth("messages") == 0


def test_a_replay_gets_its_own_grace_before_the_next_one(rows, queues, sweep, clock):
    # Given a row replayed by the last sweep, whose message is still on the queue
    rows.webhook("wh-1", age=GRACE + 1)
    sweep()

    # When the next sweep runs within the grace period, and again after it while the lane is busy
    clock.advance(GRACE - 1)
    settling = sweep()["webhook"]
    clock.advance(2)
    late = sweep()["webhook"]

    # Then neither sends a second copy
    assert (settling["settling"], settling["replayed"]) == (1, 0)
    assert (late["late"], late["replayed"]) == (1, 0)
    assert queues.depth("messages") == 1


def test_a_stalled_lane_holds_its_rows_past_patience_until_the_cap(rows, queues, sweep, clock):
    # Given a pending row past its grace, and a lane with other work queued in front of it
    rows.webhook("wh-late", lane="messages", age=GRACE + 1)
    queues.put_backlog("messages", 3)

    # When the sweeper runs while the row is younger than the patience window
    report = sweep()

    # Then the row is late, not lost: nothing is added to the busy lane
    assert (report["webhook"]["late"], report["webhook"]["replayed"]) == (1, 0)
    assert queues.depth("messages") == 3
    assert rows.get("webhook", "wh-late")["replays"] == 0

    # When the lane finishes nothing, and the row outlives patience by far
    clock.advance(PATIENCE)
    past_patience = sweep()["webhook"]
    clock.advance(CAP - PATIENCE - GRACE - 2)
    just_short_of_the_cap = sweep()["webhook"]

    # Then it is still late: the lane never got to it, so it may well be queued
    assert (past_patience["late"], past_patience["replayed"]) == (1, 0)
    assert (just_short_of_the_cap["late"], just_short_of_the_cap["replayed"]) == (1, 0)
    assert queues.depth("messages") == 3

    # When the cap passes with the lane still stalled
    clock.advance(2)
    report = sweep()

    # Then it is replayed regardless: the cap bounds how long a lost row can wait
    assert report["webhook"]["replayed"] == 1
    assert queues.depth("messages") == 4


def test_a_lane_with_a_longer_objective_than_patience_gets_its_objective(rows, queues, sweep, drains, clock):
    # Given a busy bulk lane (local objective 60 s, longer than the 30 s patience) and a job on it
    rows.job("job-bulk", lane="bulk", age=PATIENCE + 5)
    queues.put_backlog("bulk")

    # When the sweeper runs past patience but within the lane's objective
    report = sweep()

    # Then the job is still considered queued
    assert (report["job"]["late"], report["job"]["replayed"]) == (1, 0)

    # And even once the lane has finished more than it held, it is left alone within the objective
    drains.record("bulk", 5, at=clock.now + 1)
    clock.advance(10)
    assert (sweep()["job"]["replayed"]) == 0

    # And once past the objective, with the lane drained past it, it is replayed
    clock.advance(60)
    assert sweep()["job"]["replayed"] == 1


def test_job_replay_carries_payload_deadline_and_attempts(rows, queues, sweep, clock):
    # Given a lost job with a deadline and one failed attempt recorded
    rows.job("job-1", lane="ai", tenant="acme", age=GRACE + 1, deadline=int(clock.now + 600), attempts=1)

    # When the sweeper replays it
    sweep()

    # Then the message says what the row says
    [envelope] = queues.drain("ai")
    assert envelope.source == "job"
    assert envelope.payload == {"page": 3, "source": "drive"}
    assert envelope.deadline == int(clock.now + 600)
    assert envelope.attempt == 1
    assert envelope.kind == "import.page"


def test_rows_within_grace_are_not_touched(rows, queues, sweep):
    # Given a row written a moment ago (its message is surely still on the way)
    rows.webhook("wh-fresh", age=GRACE - 2)

    # When the sweeper runs
    report = sweep()

    # Then it is not even a candidate
    assert report["webhook"]["overdue"] == 0
    assert queues.depth("messages") == 0


def _settings(**changes) -> str:
    import json

    return json.dumps(
        {
            "grace_seconds": GRACE,
            "patience_seconds": PATIENCE,
            "patience_cap_seconds": CAP,
            "max_replays": 3,
            "page_rows": 3,
            "run_seconds": 60,
            **changes,
        }
    )


def test_one_sweep_replays_every_lost_row_a_page_at_a_time_with_send_message_batch(
    rows, queues, sweeper_environ, clock
):
    from pipeline.handlers.sweeper import create_handler
    from tests.support.aws import AwsCalls, handler_clients

    # Given 40 lost rows across the shards, and a sweeper that reads three rows a page
    for n in range(40):
        rows.webhook(f"wh-{n}", age=GRACE + 1 + n, send_failed_at=int(clock.now) - 60)
    clients = handler_clients(sweeper_environ)
    calls = AwsCalls().watch(clients.dynamodb, clients.sqs)

    # When one sweep runs
    report = create_handler({**sweeper_environ, "SWEEPER_SETTINGS": _settings()}, clock=clock, clients=clients)(
        {}, None
    )

    # Then every one of them is replayed, not the oldest page's worth
    assert report["webhook"]["replayed"] == 40
    assert sorted(e.id for e in queues.drain("messages")) == sorted(f"wh-{n}" for n in range(40))
    # in batches: never one SendMessage per row
    assert "sqs.SendMessage" not in calls.calls
    assert 0 < calls.calls.count("sqs.SendMessageBatch") < 40


def test_a_sweep_out_of_time_resumes_where_it_stopped(rows, queues, sweeper_environ, clock):
    from pipeline.handlers.sweeper import create_handler

    # Given late rows at the head of every shard (their lane is busy and they are within patience),
    # and lost rows behind them
    queues.put_backlog("messages", 5)
    for n in range(24):
        rows.webhook(f"late-{n}", age=GRACE + 200 + n)
    lost = [f"lost-{n}" for n in range(8)]
    for n, row_id in enumerate(lost):
        rows.webhook(row_id, age=GRACE + 1 + n, send_failed_at=int(clock.now) - 60)
    # and a sweeper whose run ends after its first page
    sweep = create_handler({**sweeper_environ, "SWEEPER_SETTINGS": _settings(run_seconds=1e-9)}, clock=clock)

    # When sweeps run one after another
    reports = []
    for _ in range(24):
        reports.append(sweep({}, None)["webhook"])
        clock.advance(0.1)

    # Then each one starts where the last stopped, and they reach the lost rows behind the late ones
    assert all(report["overdue"] <= 3 for report in reports)
    assert [rows.get("webhook", row_id)["replays"] for row_id in lost] == [1] * len(lost)
    assert sum(report["replayed"] for report in reports) == len(lost)


def test_age_of_the_oldest_pending_row_is_published_even_within_grace(rows, sweep, capsys, clock):
    # Given one young webhook row and no jobs at all
    rows.webhook("wh-young", age=5)

    # When the sweeper runs
    sweep()

    # Then the webhook age is the true age and the job age is an explicit 0, not silence
    out = capsys.readouterr().out
    assert metric(out, metric_names.OLDEST_UNPROCESSED_AGE, "webhook") == [5.0]
    assert metric(out, metric_names.OLDEST_UNPROCESSED_AGE, "job") == [0.0]
    assert metric(out, metric_names.REPLAYED, "webhook") == [0.0]
    assert metric(out, metric_names.ABANDONED, "job") == [0.0]


def test_replay_metrics_count_by_source(rows, sweep, capsys):
    rows.webhook("wh-a", age=GRACE + 100)
    rows.job("job-a", lane="messages", age=GRACE + 1)

    sweep()

    out = capsys.readouterr().out
    assert metric(out, metric_names.REPLAYED, "webhook") == [1.0]
    assert metric(out, metric_names.REPLAYED, "job") == [1.0]
    assert metric(out, metric_names.OLDEST_UNPROCESSED_AGE, "webhook") == [GRACE + 100.0]


def test_row_finished_between_query_and_read_is_left_alone(rows, queues, sweeper_environ, clock, monkeypatch):
    from pipeline.adapters.pending_rows import PendingRows
    from pipeline.handlers.sweeper import create_handler

    # Given a lost row that a consumer finishes right after the sweeper's index query
    rows.webhook("wh-race", age=GRACE + 1)
    original = PendingRows.load

    def finish_then_load(self, ids):
        rows.finish("webhook", "wh-race")
        return original(self, ids)

    monkeypatch.setattr(PendingRows, "load", finish_then_load)

    # When the sweep goes on to read the row
    report = create_handler(sweeper_environ, clock=clock)({}, None)

    # Then it sees the row finished (not overdue: overdue counts rows read pending) and sends nothing
    assert report["webhook"]["overdue"] == 0
    assert report["webhook"]["replayed"] == 0
    assert queues.depth("messages") == 0
    assert schema.PENDING_SHARD not in rows.get("webhook", "wh-race")


@pytest.mark.parametrize("lane", [lane.name for lane in ENVIRONMENTS["local"].lanes])
def test_a_lost_row_of_any_lane_is_replayed_into_that_lane(rows, queues, sweep, lane):
    # Given a lost job on the lane and, where the door routes to it, a lost delivery
    rows.job(f"job-{lane}", lane=lane, age=GRACE + 1)
    webhook = lane in WEBHOOK_LANES
    if webhook:
        rows.webhook(f"wh-{lane}", lane=lane, age=GRACE + 1)

    # When the sweeper runs
    report = sweep()

    # Then each is back on its own lane
    assert report["job"]["replayed"] == 1
    assert report["webhook"]["replayed"] == (1 if webhook else 0)
    assert sorted(e.id for e in queues.drain(lane)) == sorted([f"job-{lane}", *([f"wh-{lane}"] if webhook else [])])


def test_each_lanes_oldest_pending_row_is_published_for_its_own_age_alarm(rows, queues, sweep, capsys, clock):
    # Given an import job twenty minutes into a busy bulk lane's half-hour objective, and a
    # message job pending ten minutes on an idle lane
    queues.put_backlog("bulk", 1)
    rows.job("job-bulk", lane="bulk", age=1200, replayed_at=int(clock.now) - 1)
    rows.job("job-ai", lane="ai", age=GRACE + 100, replayed_at=int(clock.now) - 1)

    # When the sweeper runs
    sweep()

    # Then each lane's age is published on its own, so each is alarmed against its own objective
    out = capsys.readouterr().out
    assert metric(out, metric_names.OLDEST_UNPROCESSED_AGE, "job", "bulk") == [1200.0]
    assert metric(out, metric_names.OLDEST_UNPROCESSED_AGE, "job", "ai") == [GRACE + 100.0]
    # and a lane with nothing pending reads 0, not missing
    assert metric(out, metric_names.OLDEST_UNPROCESSED_AGE, "job", "messages") == [0.0]
    # while deliveries are published only for the lanes the door routes to
    published = {
        lane
        for lane in ENVIRONMENTS["local"].lane_names
        if metric(out, metric_names.OLDEST_UNPROCESSED_AGE, "webhook", lane)
    }
    assert published == set(WEBHOOK_LANES)
