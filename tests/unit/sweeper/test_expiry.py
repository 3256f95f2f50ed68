"""Rows past their retention: never replayed, and never brought back once DynamoDB's TTL deleted
them (TTL deletes some time after `expires_at`, so the sweeper can meet both)."""

from __future__ import annotations

import boto3

from pipeline import schema
from pipeline.adapters.pending_rows import PendingRows
from pipeline.adapters.row_envelopes import webhook_envelope
from pipeline.adapters.tables import TableNames
from pipeline.adapters.transactions import Committer
from pipeline.domain.effects import Table
from tests.support.aws import REGION

from .conftest import metric

GRACE = 8  # the local environment's sweeper grace


def test_a_pending_row_past_its_expiry_is_marked_expired_and_counted_not_replayed(rows, queues, sweep, clock, capsys):
    # Given a webhook row whose send failed, overdue, and whose retention ran out a minute ago
    rows.webhook("wh-old", age=GRACE + 60, send_failed_at=int(clock.now) - 60, expires_at=int(clock.now) - 60)
    # and one that still has a day to go
    rows.webhook("wh-fresh", age=GRACE + 1, send_failed_at=int(clock.now) - 9, expires_at=int(clock.now) + 86400)

    # When the sweeper runs
    report = sweep()["webhook"]

    # Then only the row still within its retention is replayed
    assert (report["expired"], report["replayed"], report["abandoned"]) == (1, 1, 0)
    assert [envelope.id for envelope in queues.drain("messages")] == ["wh-fresh"]
    # and the expired one is never replayed: marked expired, out of the pending index, and counted
    old = rows.get("webhook", "wh-old")
    assert old["replays"] == 0
    assert "replayed_at" not in old
    assert old["status"] == schema.RowStatus.EXPIRED
    assert schema.PENDING_SHARD not in old
    assert metric(capsys.readouterr().out, "ExpiredUnprocessed", "webhook") == [1]


def test_expired_rows_at_the_head_of_the_index_do_not_hide_newer_lost_rows(rows, queues, sweeper_environ, clock):
    import json

    from pipeline.handlers.sweeper import create_handler

    # Given many rows whose retention ran out (TTL has not deleted them yet), older than one lost row
    for n in range(30):
        rows.webhook(f"wh-expired-{n}", age=GRACE + 100 + n, expires_at=int(clock.now) - 1)
    rows.webhook("wh-lost", age=GRACE + 1, send_failed_at=int(clock.now) - 9)
    settings = json.loads(sweeper_environ["SWEEPER_SETTINGS"])
    environ = {**sweeper_environ, "SWEEPER_SETTINGS": json.dumps({**settings, "page_rows": 2, "run_seconds": 1e-9})}
    sweep = create_handler(environ, clock=clock)

    # When sweeps that each read one page of two rows run
    reports = [sweep({}, None)["webhook"] for _ in range(20)]

    # Then the expired rows leave the index as they are met, and the lost row is replayed
    assert sum(report["expired"] for report in reports) == 30
    assert [envelope.id for envelope in queues.drain("messages")] == ["wh-lost"]
    # and the next sweep meets none of them again
    assert sweep({}, None)["webhook"]["expired"] == 0


def test_a_row_the_ttl_deletes_under_a_sweep_is_skipped_and_never_recreated(rows, clock):
    # Given a pending row the sweeper has found in the index and read
    rows.webhook("wh-going", age=GRACE + 1, expires_at=int(clock.now) + 1)
    dynamodb = boto3.client("dynamodb", region_name=REGION)
    store = PendingRows(
        dynamodb,
        "webhook-log",
        source="webhook",
        logical_table=Table.WEBHOOK_LOG,
        to_envelope=webhook_envelope,
        committer=Committer(dynamodb, TableNames({Table.WEBHOOK_LOG: "webhook-log", Table.JOBS: "jobs"})),
        state_table="state",
    )
    [[row]] = list(store.pages(clock.now - GRACE, 10))

    # When DynamoDB's TTL deletes it before the sweeper writes
    dynamodb.delete_item(TableName="webhook-log", Key={schema.ID: {"S": "wh-going"}})

    # Then reading it again finds nothing, and neither a replay claim nor an abandonment brings it back
    assert store.load([row.id]) == []
    assert store.claim_replay(row, clock.now) is False
    assert store.abandon(row, clock.now, "test") is False
    assert store.expire(row, clock.now) is False
    assert dynamodb.get_item(TableName="webhook-log", Key={schema.ID: {"S": "wh-going"}}).get("Item") is None
