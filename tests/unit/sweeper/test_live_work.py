"""Work that shows it is alive (a long erasure, re-sent run after run with its progress on its row)
is neither replayed from scratch nor abandoned; one whose continuation was lost is replayed from
where it got to."""

from __future__ import annotations

from pipeline.domain.envelope import Envelope

GRACE = 8  # the local environment's sweeper settings
CAP = 600
PROGRESS = {"scan_from": {"id": {"S": "wh-4f1c"}}, "erased": {"webhook_rows": 5, "body_parts": 1}}


def test_a_long_erasure_that_shows_it_is_alive_is_neither_replayed_nor_abandoned(rows, queues, sweep, clock):
    # Given an erasure job pending for far longer than the cap, replayed as often as the sweeper
    # replays anything, whose latest run noted its progress a moment ago, its continuation queued
    rows.job(
        "job-erase",
        tenant="privacy",
        age=CAP * 5,
        replays=3,
        progress=PROGRESS,
        alive_at=int(clock.now - 2),
    )
    queues.put_backlog("bulk", 1)

    # When the sweeper runs
    report = sweep()["job"]

    # Then the row is left to its continuation: no copy from scratch, no abandonment
    assert (report["replayed"], report["abandoned"]) == (0, 0)
    row = rows.get("job", "job-erase")
    assert (row["status"], row["replays"]) == ("queued", 3)
    assert queues.depth("bulk") == 1


def test_a_long_erasure_whose_continuation_was_lost_is_replayed_from_its_progress(rows, queues, sweep, clock):
    # Given an erasure whose last run noted its progress long ago, and nothing on its lane
    rows.job("job-erase", tenant="privacy", age=CAP * 5, progress=PROGRESS, alive_at=int(clock.now - CAP))

    # When the sweeper runs
    report = sweep()["job"]

    # Then it is replayed carrying its progress, so it takes up where it got to
    assert report["replayed"] == 1
    [envelope] = queues.drain("bulk")
    assert isinstance(envelope, Envelope)
    assert envelope.progress == PROGRESS
