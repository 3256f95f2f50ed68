"""Work that keeps failing is abandoned loudly after three replays; nothing is abandoned quietly."""

from __future__ import annotations

import json
import logging

from pipeline import metric_names, schema
from pipeline.handlers.sweeper import create_handler

from .conftest import metric

GRACE = 8


def _replay_and_lose(sweep, queues, clock, lane: str) -> dict:
    """One sweep whose replay is taken by a consumer that dies before finishing the row."""
    report = sweep()
    queues.drain(lane)
    clock.advance(GRACE)
    return report


def test_three_failed_replays_then_abandoned_and_counted(rows, queues, sweep, clock, capsys, caplog):
    # Given a webhook whose processing kills the consumer every time (it never finishes)
    rows.webhook("wh-poison", lane="messages", tenant="waba-9", age=GRACE + 1)

    # When three sweeps replay it and each replay is lost again
    replayed = [_replay_and_lose(sweep, queues, clock, "messages")["webhook"]["replayed"] for _ in range(3)]
    capsys.readouterr()

    # And the next sweep finds it still pending
    report = sweep()

    # Then it was replayed exactly three times and is now abandoned, out of the pending index
    assert replayed == [1, 1, 1]
    assert report["webhook"]["abandoned"] == 1
    assert queues.depth("messages") == 0
    row = rows.get("webhook", "wh-poison")
    assert row["status"] == schema.RowStatus.ABANDONED
    assert row["replays"] == 3
    assert schema.PENDING_SHARD not in row
    assert "3 replays" in row["abandon_reason"]

    # And it is loud: counted by source, and logged at CRITICAL with the row's identity
    assert metric(capsys.readouterr().out, metric_names.ABANDONED, "webhook") == [1.0]
    [critical] = [record for record in caplog.records if record.levelno == logging.CRITICAL]
    assert (critical.id, critical.tenant, critical.lane) == ("wh-poison", "waba-9", "messages")

    # And a later sweep has nothing more to do with it
    clock.advance(3600)
    later = sweep()["webhook"]
    assert (later["overdue"], later["replayed"], later["abandoned"]) == (0, 0, 0)
    assert queues.depth("messages") == 0


def test_abandoned_job_leaves_its_tenants_queued_count(rows, sweep):
    # Given a job already replayed three times, counted in its tenant's queued jobs on its lane
    rows.job("job-poison", lane="ai", tenant="acme", age=GRACE + 300, replays=3)
    rows.set_queued("ai", "acme", 4)

    # When the sweeper finds it pending again
    report = sweep()

    # Then it is abandoned and the count comes down by one in the same commit
    assert report["job"]["abandoned"] == 1
    assert rows.get("job", "job-poison")["status"] == schema.RowStatus.ABANDONED
    assert rows.queued("ai", "acme") == 3


def test_abandoned_webhook_touches_no_job_counter(rows, sweep):
    rows.webhook("wh-poison", lane="ai", tenant="acme", age=GRACE + 300, replays=3)
    rows.set_queued("ai", "acme", 4)

    assert sweep()["webhook"]["abandoned"] == 1
    assert rows.queued("ai", "acme") == 4


def test_row_naming_a_lane_without_a_queue_is_abandoned_not_dropped(rows, queues, sweep):
    # Given a pending row for a lane this environment no longer has
    rows.webhook("wh-orphan", lane="retired-lane", age=GRACE + 1)

    # When the sweeper runs
    report = sweep()

    # Then it is abandoned with the reason (and kept), because it cannot be replayed anywhere
    assert report["webhook"]["abandoned"] == 1
    row = rows.get("webhook", "wh-orphan")
    assert row["status"] == schema.RowStatus.ABANDONED
    assert "retired-lane" in row["abandon_reason"]


def test_row_that_cannot_become_a_message_is_abandoned_with_the_reason(rows, sweep):
    # Given a job row that lost its tenant
    rows.job("job-broken", lane="bulk", age=GRACE + 1, tenant=None)

    report = sweep()

    assert report["job"]["abandoned"] == 1
    assert "tenant" in rows.get("job", "job-broken")["abandon_reason"]


def test_a_failed_send_gives_the_replay_back(rows, sweeper_environ, clock):
    # Given a lost row and a lane queue that refuses every message (SQS unavailable, say)
    rows.webhook("wh-outage", lane="messages", age=3600)
    queues = json.loads(sweeper_environ["LANE_QUEUES"])
    queues["messages"] = queues["messages"] + "-gone"
    handler = create_handler({**sweeper_environ, "LANE_QUEUES": json.dumps(queues)}, clock=clock)

    # When four sweeps all fail to send it
    reports = []
    for _ in range(4):
        reports.append(handler({}, None)["webhook"])
        clock.advance(GRACE)

    # Then no replay was used up and the row is still pending, never abandoned for an outage
    assert [r["replay_failed"] for r in reports] == [1, 1, 1, 1]
    assert sum(r["abandoned"] for r in reports) == 0
    row = rows.get("webhook", "wh-outage")
    assert row["replays"] == 0
    assert "replayed_at" not in row
    assert schema.PENDING_SHARD in row
