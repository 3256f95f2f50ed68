"""The writes that finish a record, committed against DynamoDB the way the consumer commits them:
one copy finishes the work and any other finds it done, whether the obligation is a row or an
internal done-marker."""

from __future__ import annotations

from decimal import Decimal

import boto3
import pytest

from pipeline import schema
from pipeline.adapters.tables import TableNames
from pipeline.adapters.transactions import Committer
from pipeline.domain.consumer import marks
from pipeline.domain.consumer.marks import Obligation
from pipeline.domain.effects import Put, Table
from pipeline.domain.envelope import Envelope
from pipeline.domain.errors import Classified
from pipeline.domain.ports import CommitState
from tests.support.aws import REGION

DONE, QUEUED = schema.RowStatus.DONE, schema.RowStatus.QUEUED
TTL = 3600
NOW = 1_700_000_000.75
ERROR = Classified(transient=False, error_class="PermanentError", reason="bad_page", message="rows missing")


@pytest.fixture
def committer(deployed) -> Committer:
    names = TableNames({Table.WEBHOOK_LOG: "webhook-log", Table.JOBS: "jobs", Table.STATE: "state", Table.DATA: "data"})
    return Committer(boto3.client("dynamodb", region_name=REGION), names)


@pytest.fixture
def dynamodb(deployed):
    return boto3.resource("dynamodb", region_name=REGION)


def _envelope(source: str, work_id: str, deferrals: int = 0) -> Envelope:
    return Envelope(
        id=work_id,
        lane="scheduled",
        tenant="t",
        kind="k",
        source=source,
        created_at=1.0,
        payload={},
        deferrals=deferrals,
    )


def _read(envelope: Envelope, found) -> Obligation:
    table, key = marks.locate(envelope, "scheduled")
    return Obligation(table, key, found)


def _effect(copy: str) -> Put:
    return Put(Table.DATA, {schema.PK: "tick#t", schema.SK: copy})


def _queued_row(dynamodb, table: str, row_id: str, status: str = QUEUED) -> dict:
    row = {schema.ID: row_id, "status": status, schema.PENDING_SHARD: "p3", schema.PENDING_SINCE: Decimal(1)}
    dynamodb.Table(table).put_item(Item=row)
    return row


def _stored(dynamodb, table: str, key: dict) -> dict | None:
    return dynamodb.Table(table).get_item(Key=key, ConsistentRead=True).get("Item")


# Where each obligation lives


def test_each_source_finds_its_obligation_where_it_is_kept():
    assert marks.locate(_envelope("webhook", "wh-1"), "messages") == (Table.WEBHOOK_LOG, {schema.ID: "wh-1"})
    assert marks.locate(_envelope("job", "j-1"), "bulk") == (Table.JOBS, {schema.ID: "j-1"})
    assert marks.locate(_envelope("internal", "tick-1"), "scheduled") == (
        Table.STATE,
        {schema.PK: "done#scheduled#tick-1"},
    )


def test_what_is_still_to_do():
    tick, job = _envelope("internal", "tick-1"), _envelope("job", "j-1")
    # An internal record is open until its marker exists, and a found marker reads as done
    assert (_read(tick, None).open, _read(tick, None).status, _read(tick, None).missing_row) == (True, None, False)
    assert (_read(tick, {"pk": "x"}).open, _read(tick, {"pk": "x"}).status) == (False, DONE)
    # A row is open while queued, failed (a redrive) or abandoned (a late copy), and not otherwise
    for status, is_open in [
        ("queued", True),
        ("failed", True),
        ("abandoned", True),
        ("done", False),
        ("expired", False),
        ("unparseable", False),
    ]:
        assert _read(job, {"status": status}).open is is_open, status
    # A row with no status is not open; a row that is not there is missing
    assert (_read(job, {}).status, _read(job, {}).open) == ("", False)
    assert (_read(job, None).open, _read(job, None).missing_row) == (False, True)


# Internal work: the done-marker


def test_two_racing_copies_of_a_tick_commit_their_writes_once(committer, dynamodb):
    # Given two copies of one tick that both read "no marker yet"
    tick = _envelope("internal", "tick-1")
    first = marks.finish(_read(tick, None), tick, status=DONE, now=NOW, attempts=1, marker_ttl_seconds=TTL)
    second = marks.finish(_read(tick, None), tick, status=DONE, now=NOW + 1, attempts=2, marker_ttl_seconds=TTL)

    # When both commit their marker with their task's write
    results = [committer.commit(first, [_effect("first")]), committer.commit(second, [_effect("second")])]

    # Then the first finishes the work and the second finds it done and writes nothing
    assert [result.state for result in results] == [CommitState.COMMITTED, CommitState.DUPLICATE]
    assert dynamodb.Table("data").scan()["Items"] == [{schema.PK: "tick#t", schema.SK: "first"}]
    assert _stored(dynamodb, "state", {schema.PK: "done#scheduled#tick-1"}) == {
        schema.PK: "done#scheduled#tick-1",
        marks.OUTCOME: DONE,
        marks.FINISHED_AT: Decimal(str(NOW)),
        marks.ATTEMPTS: 1,
        schema.TTL: int(NOW) + TTL,
    }


def test_a_second_copy_of_a_tick_with_nothing_to_write_is_a_duplicate(committer):
    tick = _envelope("internal", "tick-1")
    mark = marks.finish(_read(tick, None), tick, status=DONE, now=NOW, attempts=1, marker_ttl_seconds=TTL)

    assert [committer.commit(mark, ()).state for _ in range(2)] == [CommitState.COMMITTED, CommitState.DUPLICATE]


def test_a_superseded_tick_is_marked_superseded_not_done(committer, dynamodb):
    tick = _envelope("internal", "turn-1")
    mark = marks.finish(
        _read(tick, None), tick, status=DONE, now=NOW, attempts=1, marker_ttl_seconds=TTL, outcome="superseded"
    )

    committer.commit(mark, ())

    stored = _stored(dynamodb, "state", {schema.PK: "done#scheduled#turn-1"})
    assert stored is not None
    assert stored[marks.OUTCOME] == "superseded"


def test_internal_work_that_is_not_done_leaves_no_marker():
    tick = _envelope("internal", "tick-1")
    for status in (schema.RowStatus.EXPIRED, schema.RowStatus.FAILED):
        assert marks.finish(_read(tick, None), tick, status=status, now=NOW, attempts=1, marker_ttl_seconds=TTL) is None


# Rows: webhook log and jobs


@pytest.mark.parametrize(("source", "table"), [("webhook", "webhook-log"), ("job", "jobs")])
def test_finishing_a_row_records_the_outcome_and_leaves_the_pending_index(committer, dynamodb, source, table):
    # Given a queued row, deferred twice before this attempt
    row = _queued_row(dynamodb, table, "w-1")
    envelope = _envelope(source, "w-1", deferrals=2)

    mark = marks.finish(_read(envelope, row), envelope, status=DONE, now=NOW, attempts=3, marker_ttl_seconds=TTL)
    result = committer.commit(mark, ())

    # Then the row says done, when and after how many attempts, and is out of the pending index
    assert result.state is CommitState.COMMITTED
    assert _stored(dynamodb, table, {schema.ID: "w-1"}) == {
        schema.ID: "w-1",
        "status": DONE,
        marks.UPDATED_AT: Decimal(str(NOW)),
        marks.FINISHED_AT: Decimal(str(NOW)),
        marks.ATTEMPTS: 3,
        marks.DEFERRALS: 2,
        schema.PENDING_SINCE: 1,
    }


@pytest.mark.parametrize(("source", "table"), [("webhook", "webhook-log"), ("job", "jobs")])
def test_a_done_job_keeps_what_its_task_counted_and_a_webhook_row_does_not(committer, dynamodb, source, table):
    # Given a queued row, and a task that counted what it did
    row = _queued_row(dynamodb, table, "w-2")
    envelope = _envelope(source, "w-2")
    counted = {"rows": 40, "skipped": 0}

    mark = marks.finish(
        _read(envelope, row), envelope, status=DONE, now=NOW, attempts=1, marker_ttl_seconds=TTL, result=counted
    )
    committer.commit(mark, ())

    # Then a job's row shows the counts beside its status (GET /jobs/{id} reads them); the webhook
    # log's row is nobody's answer, and gets no bytes for them
    stored = _stored(dynamodb, table, {schema.ID: "w-2"})
    assert stored is not None
    assert stored["status"] == DONE
    assert stored.get(marks.RESULT) == (counted if source == "job" else None)


def test_a_job_whose_task_counted_nothing_has_no_result(committer, dynamodb):
    row = _queued_row(dynamodb, "jobs", "j-3")
    envelope = _envelope("job", "j-3")

    mark = marks.finish(
        _read(envelope, row), envelope, status=DONE, now=NOW, attempts=1, marker_ttl_seconds=TTL, result={}
    )
    committer.commit(mark, ())

    stored = _stored(dynamodb, "jobs", {schema.ID: "j-3"})
    assert stored is not None
    assert marks.RESULT not in stored


def test_a_failed_row_keeps_the_reason_it_failed(committer, dynamodb):
    row = _queued_row(dynamodb, "jobs", "j-1")
    envelope = _envelope("job", "j-1")
    status = schema.RowStatus.FAILED

    mark = marks.finish(
        _read(envelope, row), envelope, status=status, now=NOW, attempts=1, marker_ttl_seconds=TTL, error=ERROR
    )
    committer.commit(mark, ())

    stored = _stored(dynamodb, "jobs", {schema.ID: "j-1"})
    assert stored is not None
    assert (stored["status"], stored[marks.LAST_ERROR], stored[marks.ERROR_CLASS]) == (
        status,
        "bad_page: rows missing",
        "PermanentError",
    )
    assert schema.PENDING_SHARD not in stored


def test_a_row_another_copy_finished_first_is_a_duplicate_and_stays_as_it_finished(committer, dynamodb):
    # Given two copies that read the row queued; the first finishes it
    row = _queued_row(dynamodb, "webhook-log", "wh-1")
    envelope = _envelope("webhook", "wh-1")
    first = marks.finish(_read(envelope, row), envelope, status=DONE, now=NOW, attempts=1, marker_ttl_seconds=TTL)
    late = marks.finish(
        _read(envelope, row), envelope, status=schema.RowStatus.EXPIRED, now=NOW + 5, attempts=2, marker_ttl_seconds=TTL
    )
    committer.commit(first, ())

    # When the second finishes it too, with a task write
    result = committer.commit(late, [_effect("late")])

    # Then it is a duplicate: the row stays done, and the write is not made
    assert result.state is CommitState.DUPLICATE
    stored = _stored(dynamodb, "webhook-log", {schema.ID: "wh-1"})
    assert stored is not None
    assert (stored["status"], stored[marks.ATTEMPTS]) == (DONE, 1)
    assert dynamodb.Table("data").scan()["Items"] == []


@pytest.mark.parametrize("status", [schema.RowStatus.FAILED, schema.RowStatus.ABANDONED])
def test_a_redriven_or_late_copy_completes_a_failed_or_abandoned_row(committer, dynamodb, status):
    row = _queued_row(dynamodb, "jobs", "j-1", status=status)
    envelope = _envelope("job", "j-1")

    mark = marks.finish(_read(envelope, row), envelope, status=DONE, now=NOW, attempts=4, marker_ttl_seconds=TTL)

    assert committer.commit(mark, ()).state is CommitState.COMMITTED
    assert _stored(dynamodb, "jobs", {schema.ID: "j-1"})["status"] == DONE  # type: ignore[index]


# Between attempts


def test_a_retry_note_shows_the_attempts_and_the_last_error_and_keeps_the_row_pending(committer, dynamodb):
    row = _queued_row(dynamodb, "jobs", "j-1")
    envelope = _envelope("job", "j-1", deferrals=1)

    note = marks.retry_note(_read(envelope, row), envelope, now=NOW, attempts=2, error=ERROR)
    result = committer.commit(note, ())

    assert result.state is CommitState.COMMITTED
    assert _stored(dynamodb, "jobs", {schema.ID: "j-1"}) == {
        **row,
        marks.UPDATED_AT: Decimal(str(NOW)),
        marks.ATTEMPTS: 2,
        marks.DEFERRALS: 1,
        marks.LAST_ERROR: "bad_page: rows missing",
        marks.ERROR_CLASS: "PermanentError",
    }


def test_a_retry_note_on_a_row_another_copy_finished_changes_nothing(committer, dynamodb):
    # Given a row read as queued, then finished by another copy
    row = _queued_row(dynamodb, "jobs", "j-1")
    envelope = _envelope("job", "j-1")
    done = marks.finish(_read(envelope, row), envelope, status=DONE, now=NOW, attempts=1, marker_ttl_seconds=TTL)
    committer.commit(done, ())
    finished = _stored(dynamodb, "jobs", {schema.ID: "j-1"})

    # When the slower copy notes its failed attempt
    note = marks.retry_note(_read(envelope, row), envelope, now=NOW + 1, attempts=2, error=ERROR)
    result = committer.commit(note, ())

    # Then the note is refused as the other copy's work, and the finished row is left as it was
    assert result.state is CommitState.DUPLICATE
    assert _stored(dynamodb, "jobs", {schema.ID: "j-1"}) == finished


def test_only_a_plainly_queued_webhook_row_is_finished_by_its_keyed_writes_alone():
    # Given the same plainly queued row, as a webhook delivery's and as a job's
    queued = {schema.ID: "r1", "status": schema.RowStatus.QUEUED}
    webhook = marks.Obligation(Table.WEBHOOK_LOG, {schema.ID: "r1"}, queued)
    job = marks.Obligation(Table.JOBS, {schema.ID: "r1"}, queued)
    # When its task's writes are each keyed and it called no vendor
    # Then the webhook's writes are its done-mark, but a job keeps its row's status (GET /jobs/{id})
    assert marks.effect_is_mark(webhook, keyed=True, called_out=False)
    assert not marks.effect_is_mark(job, keyed=True, called_out=False)
    # And a row that is missing, or an internal marker, is never finished that way either
    assert not marks.effect_is_mark(marks.Obligation(Table.WEBHOOK_LOG, {schema.ID: "r1"}, None), True, False)
    assert not marks.effect_is_mark(marks.Obligation(Table.STATE, {schema.PK: "m"}, None), True, False)
