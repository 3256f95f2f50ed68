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

GRACE = 8  # the local environment's sweeper grace


def test_a_pending_row_past_its_expiry_is_left_for_the_ttl_not_replayed(rows, queues, sweep, clock):
    # Given a webhook row whose send failed, overdue, and whose retention ran out a minute ago
    rows.webhook("wh-old", age=GRACE + 60, send_failed_at=int(clock.now) - 60, expires_at=int(clock.now) - 60)
    # and one that still has a day to go
    rows.webhook("wh-fresh", age=GRACE + 1, send_failed_at=int(clock.now) - 9, expires_at=int(clock.now) + 86400)

    # When the sweeper runs
    report = sweep()["webhook"]

    # Then only the row still within its retention is replayed
    assert (report["expired"], report["replayed"], report["abandoned"]) == (1, 1, 0)
    assert [envelope.id for envelope in queues.drain("messages")] == ["wh-fresh"]
    # and the expired one is untouched: no replay claimed on it
    assert rows.get("webhook", "wh-old")["replays"] == 0
    assert "replayed_at" not in rows.get("webhook", "wh-old")


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
    )
    overdue = store.overdue(clock.now - GRACE, 10)
    [row] = store.load(overdue.ids)

    # When DynamoDB's TTL deletes it before the sweeper writes
    dynamodb.delete_item(TableName="webhook-log", Key={schema.ID: {"S": "wh-going"}})

    # Then reading it again finds nothing, and neither a replay claim nor an abandonment brings it back
    assert store.load(overdue.ids) == []
    assert store.claim_replay(row, clock.now) is False
    assert store.abandon(row, clock.now, "test") is False
    assert dynamodb.get_item(TableName="webhook-log", Key={schema.ID: {"S": "wh-going"}}).get("Item") is None
