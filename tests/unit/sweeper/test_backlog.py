"""At load: a lane whose work is merely queued gets no replays, however long the wait, while a row
that really lost its message is replayed once the lane has drained past it. A lane the sweeper
cannot see is treated as busy."""

from __future__ import annotations

import json

import pytest
from botocore.exceptions import ClientError, ReadTimeoutError

from pipeline.adapters.clients import Clients
from pipeline.handlers.sweeper import create_handler
from tests.support.aws import REGION

GRACE = 8  # the local environment's sweeper settings
PATIENCE = 30
CAP = 600
LANE = "messages"
QUEUED = 1_100
"""The depth the lane reached under 15 webhooks a second on the local runtime."""
ARRIVALS_PER_SECOND = 10
LOST_AGE = 110.0


def _a_lane_at_load(rows, queues) -> list[str]:
    """QUEUED webhook rows whose messages are all on the lane, oldest first, arrived at
    ARRIVALS_PER_SECOND (the oldest waited about two minutes, four times the patience window),
    plus one row, as old as some of the oldest, whose message never arrived. Returns the queued
    rows' ids, oldest first."""
    ages = {f"wh-{n:04}": GRACE + 1 + (QUEUED - n) / ARRIVALS_PER_SECOND for n in range(QUEUED)}
    queues.send(rows.webhooks(ages, lane=LANE))
    rows.webhook("wh-lost", lane=LANE, age=LOST_AGE)
    return list(ages)


def _finish(rows, queues, drains, lane: str, count: int, at: float) -> None:
    """Consumers take `count` messages, finish their rows and count them, as they do at `at`."""
    taken = queues.take(lane, count)
    assert len(taken) == count
    rows.finish_many("webhook", [envelope.id for envelope in taken])
    drains.record(lane, count, at=at)


def _replay_counts(rows, ids: list[str]) -> set[int]:
    return {int(rows.get("webhook", row_id)["replays"]) for row_id in ids}


def test_a_lane_holding_a_thousand_messages_gets_no_replays(rows, queues, sweep, clock):
    # Given a lane holding 1,100 messages, each of them some pending row's, most rows long past
    # the patience window, and one row whose message was lost
    queued = _a_lane_at_load(rows, queues)
    assert queues.depth(LANE) == QUEUED

    # When the sweeper runs, and runs again well past patience while the lane finishes nothing
    first = sweep()["webhook"]
    clock.advance(PATIENCE * 3)
    later = sweep()["webhook"]

    # Then nothing is replayed into it: every row it looked at is late, and the lane is no deeper
    assert (first["replayed"], later["replayed"], first["abandoned"], later["abandoned"]) == (0, 0, 0, 0)
    assert first["late"] == first["overdue"] > 0
    assert later["late"] == later["overdue"] > 0
    assert queues.depth(LANE) == QUEUED
    assert rows.get("webhook", queued[0])["replays"] == 0
    assert rows.get("webhook", "wh-lost")["replays"] == 0


def test_only_the_lost_row_is_replayed_once_the_lane_has_drained_past_it(rows, queues, sweep, drains, clock):
    # Given the lane at load, seen by a sweep that left every row alone
    _a_lane_at_load(rows, queues)
    assert sweep()["webhook"]["replayed"] == 0
    first_sweep_at = clock.now

    # When consumers work through half the backlog, and the next sweeps run past patience
    _finish(rows, queues, drains, LANE, QUEUED // 2, at=first_sweep_at + 10)
    clock.advance(PATIENCE)
    halfway = sweep()["webhook"]

    # Then the lost row is still only late: the lane has not yet reached where it would be
    assert (halfway["replayed"], halfway["late"]) == (0, halfway["overdue"])
    assert rows.get("webhook", "wh-lost")["replays"] == 0
    assert queues.depth(LANE) == QUEUED - QUEUED // 2

    # When the consumers finish the rest, while new deliveries keep the lane busy
    _finish(rows, queues, drains, LANE, QUEUED - QUEUED // 2, at=first_sweep_at + 20)
    arriving = rows.webhooks({f"wh-new-{n}": GRACE + 1 for n in range(20)}, lane=LANE)
    clock.advance(GRACE + 1)
    queues.send(arriving)
    report = sweep()["webhook"]

    # Then the lost row, and only it, is replayed, once, into the still-busy lane
    assert report["replayed"] == 1
    assert rows.get("webhook", "wh-lost")["replays"] == 1
    assert _replay_counts(rows, [f"wh-new-{n}" for n in range(20)]) == {0}
    assert queues.depth(LANE) == 20 + 1
    replayed = [e.id for e in queues.take(LANE, 21) if not e.id.startswith("wh-new-")]
    assert replayed == ["wh-lost"]


def test_a_replay_waits_behind_the_backlog_like_the_original(rows, queues, sweep, drains, clock):
    # Given a lost row replayed into an empty lane, which is then flooded behind its copy
    rows.webhook("wh-lost", lane=LANE, age=GRACE + 1)
    assert sweep()["webhook"]["replayed"] == 1
    replayed_at = clock.now
    queues.put_backlog(LANE, 200)

    # When sweeps run past the replay's grace, and past patience, while the lane finishes far less
    # than it holds
    drains.record(LANE, 50, at=replayed_at + 10)
    reports = []
    for _ in range(4):
        clock.advance(GRACE + 1)
        reports.append(sweep()["webhook"])

    # Then no second copy is sent: the copy is as late as the original was, not lost
    assert [r["replayed"] for r in reports] == [0, 0, 0, 0]
    assert [r["late"] for r in reports] == [1, 1, 1, 1]
    assert rows.get("webhook", "wh-lost")["replays"] == 1
    assert queues.depth(LANE) == 201


def test_the_cap_runs_from_the_latest_send(rows, queues, sweep, clock):
    # Given a row lost almost a cap ago, replayed into an empty lane, which then stalls behind it
    rows.webhook("wh-old", lane=LANE, age=CAP - 50)
    assert sweep()["webhook"]["replayed"] == 1
    queues.put_backlog(LANE, 3)

    # When the row is older than the cap, but its replay is not
    clock.advance(60)
    report = sweep()["webhook"]

    # Then the replay is left alone: it has waited a minute, not a cap
    assert (report["late"], report["replayed"]) == (1, 0)
    assert queues.depth(LANE) == 4


@pytest.mark.parametrize(
    "failure",
    [
        ClientError(
            {"Error": {"Code": "AWS.SimpleQueueService.ServiceUnavailable", "Message": "injected"}},
            "GetQueueAttributes",
        ),
        ReadTimeoutError(endpoint_url=f"https://sqs.{REGION}.amazonaws.com/"),
    ],
    ids=["sqs-error", "read-timeout"],
)
def test_a_lane_whose_depth_cannot_be_read_gets_no_replay(rows, queues, sweeper_environ, clock, failure):
    # Given a lost row on an empty lane (visible, it would be replayed at once), and a sweeper
    # whose reads of the lane's depth fail; sending would still work
    rows.webhook("wh-unseen", lane=LANE, age=GRACE + 1)
    clients = Clients(region=REGION)

    def fail(**_: object) -> None:
        raise failure

    clients.sqs.meta.events.register("before-parameter-build.sqs.GetQueueAttributes", fail)
    handler = create_handler(sweeper_environ, clock=clock, clients=clients)

    # When it sweeps, and again past patience
    first = handler({}, None)["webhook"]
    clock.advance(PATIENCE * 2)
    later = handler({}, None)["webhook"]

    # Then the unseen lane counts as busy: nothing is sent, and the row is untouched
    assert (first["late"], first["replayed"], first["replay_failed"]) == (1, 0, 0)
    assert (later["late"], later["replayed"], later["replay_failed"]) == (1, 0, 0)
    assert queues.depth(LANE) == 0
    row = rows.get("webhook", "wh-unseen")
    assert row["replays"] == 0
    assert "replayed_at" not in row

    # When the cap passes with the lane still unreadable
    clock.advance(CAP)
    capped = handler({}, None)["webhook"]

    # Then the row is replayed: the cap bounds how long a lost row waits on a lane nobody can see
    assert capped["replayed"] == 1
    assert [e.id for e in queues.take(LANE, 10)] == ["wh-unseen"]


def test_drain_counts_that_cannot_be_read_show_nothing_drained_past(rows, queues, drains, sweeper_environ, clock):
    # Given a lost row on a busy lane that has since finished far more than it held
    rows.webhook("wh-lost", lane=LANE, age=GRACE + 1)
    queues.put_backlog(LANE, 5)
    handler_sees_state = create_handler(sweeper_environ, clock=clock)
    assert handler_sees_state({}, None)["webhook"]["late"] == 1
    drains.record(LANE, 500, at=clock.now + 1)
    clock.advance(PATIENCE + 1)

    # And a sweeper whose reads of the drain counts fail
    clients = Clients(region=REGION)

    def fail_state_reads(params: dict, **_: object) -> None:
        if "state" in params.get("RequestItems", {}):
            raise ClientError(
                {"Error": {"Code": "ProvisionedThroughputExceededException", "Message": "injected"}}, "BatchGetItem"
            )

    clients.dynamodb.meta.events.register("before-parameter-build.dynamodb.BatchGetItem", fail_state_reads)
    report = create_handler(sweeper_environ, clock=clock, clients=clients)({}, None)["webhook"]

    # Then the row is held: without the counts, nothing shows the lane got past it
    assert (report["late"], report["replayed"]) == (1, 0)
    assert queues.depth(LANE) == 5

    # And with them, the same sweep replays it
    assert create_handler(sweeper_environ, clock=clock)({}, None)["webhook"]["replayed"] == 1


def test_settings_carry_the_cap(sweeper_environ):
    # The local environment's sweeper is deployed with the cap these tests rely on
    assert json.loads(sweeper_environ["SWEEPER_SETTINGS"])["patience_cap_seconds"] == CAP


def test_a_row_the_door_could_not_send_is_replayed_after_grace_however_busy_its_lane(rows, queues, sweep, clock):
    # Given a lane holding a thousand messages, and a row the door marked when its send failed
    queues.put_backlog(LANE, 1_000)
    rows.webhook("wh-unsent", lane=LANE, age=GRACE + 1, send_failed_at=int(clock.now - GRACE - 1))
    # And a row of the same age whose message is queued (not marked)
    rows.webhook("wh-queued", lane=LANE, age=GRACE + 1)

    # When the sweeper runs
    report = sweep()["webhook"]

    # Then the unsent row is replayed at once: nothing of it was queued to wait for
    assert (report["replayed"], report["late"]) == (1, 1)
    assert rows.get("webhook", "wh-unsent")["replays"] == 1
    assert rows.get("webhook", "wh-queued")["replays"] == 0
    assert queues.depth(LANE) == 1_001
