"""Committing a done-mark with a task's writes: what each failed condition means."""

from __future__ import annotations

from dataclasses import replace

import boto3
import pytest

from pipeline import schema
from pipeline.adapters.tables import TableNames
from pipeline.adapters.transactions import Committer
from pipeline.domain.effects import Check, OnConflict, Put, Table, Update
from pipeline.domain.errors import PermanentError
from pipeline.domain.ports import CommitState
from tests.support.aws import REGION

MARK_KEY = {schema.PK: "done#test#w1"}


@pytest.fixture
def committer(deployed):
    names = TableNames({Table.WEBHOOK_LOG: "webhook-log", Table.JOBS: "jobs", Table.STATE: "state", Table.DATA: "data"})
    return Committer(boto3.client("dynamodb", region_name=REGION), names)


@pytest.fixture
def tables(deployed):
    resource = boto3.resource("dynamodb", region_name=REGION)
    return resource.Table("state"), resource.Table("data")


def _mark() -> Put:
    return Put(
        Table.STATE,
        {**MARK_KEY, "outcome": "done"},
        condition="attribute_not_exists(#pk)",
        names={"#pk": schema.PK},
        on_conflict=OnConflict.FAIL,
    )


def _row(n: int, **extra) -> Put:
    return Put(Table.DATA, {schema.PK: "rows", schema.SK: f"r{n:04d}", **extra}, standalone=True)


def _if_absent(n: int) -> Put:
    return Put(
        Table.DATA,
        {schema.PK: "rows", schema.SK: f"r{n:04d}", "v": "new"},
        condition="attribute_not_exists(#pk)",
        names={"#pk": schema.PK},
        on_conflict=OnConflict.SKIP,
    )


def test_mark_and_writes_land_together(committer, tables):
    state, data = tables
    result = committer.commit(_mark(), [_row(1), _row(2)])
    assert result.state is CommitState.COMMITTED
    assert state.get_item(Key=MARK_KEY).get("Item") is not None
    assert data.get_item(Key={schema.PK: "rows", schema.SK: "r0002"}).get("Item") is not None


def test_a_failed_done_mark_means_duplicate_and_nothing_is_written(committer, tables):
    state, data = tables
    state.put_item(Item={**MARK_KEY, "outcome": "done"})
    result = committer.commit(_mark(), [_row(1)])
    assert result.state is CommitState.DUPLICATE
    assert data.get_item(Key={schema.PK: "rows", schema.SK: "r0001"}).get("Item") is None


def test_a_stale_write_is_skipped_and_the_rest_commit(committer, tables):
    # Given one of three writes whose item already exists
    state, data = tables
    data.put_item(Item={schema.PK: "rows", schema.SK: "r0002", "v": "old"})
    # When they commit with the mark
    result = committer.commit(_mark(), [_if_absent(1), _if_absent(2), _if_absent(3)])
    # Then the stale one alone is dropped
    assert (result.state, result.skipped) == (CommitState.COMMITTED, 1)
    assert data.get_item(Key={schema.PK: "rows", schema.SK: "r0002"})["Item"]["v"] == "old"
    assert data.get_item(Key={schema.PK: "rows", schema.SK: "r0003"})["Item"]["v"] == "new"
    assert state.get_item(Key=MARK_KEY).get("Item") is not None


def test_a_failed_supersede_check_commits_the_mark_alone(committer, tables):
    state, data = tables
    state.put_item(Item={schema.PK: "marker", "token": "newer"})
    check = Check(Table.STATE, {schema.PK: "marker"}, "#t = :mine", names={"#t": "token"}, values={":mine": "older"})
    result = committer.commit(_mark(), [_row(1), check])
    assert result.state is CommitState.SUPERSEDED
    assert data.get_item(Key={schema.PK: "rows", schema.SK: "r0001"}).get("Item") is None
    assert state.get_item(Key=MARK_KEY).get("Item") is not None


def test_more_writes_than_one_transaction_holds_commit_when_they_are_standalone(committer, tables):
    _, data = tables
    counter = Update(
        Table.DATA, {schema.PK: "rows", schema.SK: "count"}, "ADD #n :one", names={"#n": "n"}, values={":one": 1}
    )
    result = committer.commit(_mark(), [*(_row(n) for n in range(250)), counter])
    assert result.state is CommitState.COMMITTED
    items = data.query(KeyConditionExpression="pk = :p", ExpressionAttributeValues={":p": "rows"})["Items"]
    assert len(items) == 251
    assert next(i for i in items if i[schema.SK] == "count")["n"] == 1


def test_more_bound_writes_than_one_transaction_holds_are_refused(committer, tables):
    writes = [
        Update(
            Table.DATA, {schema.PK: "rows", schema.SK: f"c{n}"}, "ADD #n :one", names={"#n": "n"}, values={":one": 1}
        )
        for n in range(100)
    ]
    with pytest.raises(PermanentError, match="transaction holds 100 items"):
        committer.commit(_mark(), writes)


def test_two_writes_to_one_item_are_refused_before_anything_is_sent(committer, tables):
    with pytest.raises(PermanentError, match="two writes to one item"):
        committer.commit(_mark(), [_row(1), _row(1, v="again")])


def test_a_lone_mark_that_finds_the_work_done_is_a_duplicate(committer, tables):
    state, _ = tables
    state.put_item(Item={**MARK_KEY, "outcome": "done"})
    assert committer.commit(_mark(), []).state is CommitState.DUPLICATE


def test_a_commit_with_no_room_for_its_next_call_stops_between_calls_and_resumes_after_what_landed(committer, tables):
    # Given 350 standalone writes (three chunks ahead of the mark's transaction) and time for two calls
    state, data = tables
    writes = [_row(n) for n in range(350)]
    calls = iter([True, False])
    stopped = committer.commit(_mark(), writes, room=lambda: next(calls))
    # Then two chunks landed, the mark did not, and the result says how far it got
    assert (stopped.state, stopped.done) == (CommitState.PARTIAL, 200)
    assert state.get_item(Key=MARK_KEY).get("Item") is None
    # When a copy resumes from there with time enough
    finished = committer.commit(_mark(), writes, resume_from=stopped.done, room=lambda: True)
    # Then the rest and the mark land
    assert (finished.state, finished.done) == (CommitState.COMMITTED, 251)
    assert state.get_item(Key=MARK_KEY).get("Item") is not None
    assert data.get_item(Key={schema.PK: "rows", schema.SK: "r0349"}).get("Item") is not None


def test_applying_keyed_writes_stops_when_out_of_room_and_a_resumed_copy_is_not_a_duplicate(committer, tables):
    _, data = tables
    writes = [replace(_if_absent(n), standalone=True) for n in range(5)]
    answers = iter([True, False])
    stopped = committer.apply(writes, room=lambda: next(answers))
    assert (stopped.state, stopped.done) == (CommitState.PARTIAL, 2)
    assert data.get_item(Key={schema.PK: "rows", schema.SK: "r0002"}).get("Item") is None
    finished = committer.apply(writes, resume_from=2, room=lambda: True)
    assert (finished.state, finished.done, finished.skipped) == (CommitState.COMMITTED, 5, 0)
