"""Replay generations as plain rules: generation 0 changes nothing, a replay re-opens work an
earlier generation finished, and its keyed writes replace an older generation's items, never an
equal one's."""

from __future__ import annotations

import json

import pytest

from pipeline import schema
from pipeline.domain.consumer import generations, marks
from pipeline.domain.consumer.marks import Obligation
from pipeline.domain.effects import Check, OnConflict, Put, Table, Update
from pipeline.domain.envelope import Envelope, MalformedEnvelope

STORE = Put(
    Table.DATA,
    {schema.PK: "person#p", schema.SK: "msg#t#wamid.1", "text": "hi"},
    condition="attribute_not_exists(#pk)",
    names={"#pk": schema.PK},
    standalone=True,
)
STATUS = Update(
    Table.DATA,
    {schema.PK: "person#p", schema.SK: "status#t#wamid.1"},
    expression="SET #rank = :rank",
    condition="attribute_not_exists(#rank) OR #rank < :rank",
    names={"#rank": "status_rank"},
    values={":rank": 2},
    standalone=True,
)


def _envelope(generation: int = 0, source: str = "webhook") -> Envelope:
    return Envelope(
        id="wh-1",
        lane="messages",
        tenant="t",
        kind="k",
        source=source,
        created_at=1.0,
        ref="wh-1",
        generation=generation,
    )


def _row(status: str, generation: int | None = None) -> Obligation:
    found = {schema.ID: "wh-1", "status": status}
    if generation is not None:
        found[schema.GENERATION] = generation
    return Obligation(Table.WEBHOOK_LOG, {schema.ID: "wh-1"}, found)


def test_generation_zero_leaves_every_write_and_the_message_exactly_as_they_were():
    # Given the pipeline's own traffic
    writes = (STORE, STATUS)

    # Then its writes are the same objects, and its message has no generation field
    assert generations.stamp(writes, 0) is writes
    assert "generation" not in json.loads(_envelope().to_json())
    assert Envelope.from_json(_envelope().to_json()).generation == 0


def test_a_replay_travels_in_the_envelope_and_survives_a_deferral():
    replayed = _envelope(3)

    assert json.loads(replayed.to_json())["generation"] == 3
    assert Envelope.from_json(replayed.deferred().to_json()).generation == 3


def test_a_negative_generation_is_not_an_envelope():
    with pytest.raises(MalformedEnvelope, match="generation must be >= 0"):
        Envelope.from_dict({**json.loads(_envelope().to_json()), "generation": -1})


@pytest.mark.parametrize(
    ("status", "row_generation", "replay", "open_"),
    [
        (schema.RowStatus.DONE, None, 1, True),
        (schema.RowStatus.DONE, 1, 1, False),
        (schema.RowStatus.DONE, 1, 2, True),
        (schema.RowStatus.DONE, 3, 2, False),
        (schema.RowStatus.QUEUED, None, 1, True),
        (schema.RowStatus.EXPIRED, None, 1, True),
        (schema.RowStatus.FAILED, 1, 1, False),
        (schema.RowStatus.ERASED, None, 1, False),
        (schema.RowStatus.UNPARSEABLE, None, 1, False),
    ],
)
def test_a_replay_opens_a_row_only_below_its_generation(status, row_generation, replay, open_):
    assert _row(status, row_generation).open_to(replay) is open_


def test_generation_zero_keeps_the_done_mark_as_it_was():
    assert _row(schema.RowStatus.DONE).open_to(0) is False
    assert _row(schema.RowStatus.QUEUED).open_to(0) is True


def test_internal_work_keeps_one_marker_per_generation():
    assert marks.marker_key("ai", "turn-1") == "done#ai#turn-1"
    assert marks.marker_key("ai", "turn-1", 2) == "done#ai#turn-1#g2"
    table, key = marks.locate(_envelope(2, source="internal"), "ai")
    assert (table, key) == (Table.STATE, {schema.PK: "done#ai#wh-1#g2"})


def test_a_replayed_put_replaces_an_older_generation_and_carries_its_own():
    [put] = generations.stamp((STORE,), 2)

    assert isinstance(put, Put)
    assert put.item[schema.GENERATION] == 2
    assert put.condition == (
        "attribute_not_exists(#replay_generation) OR #replay_generation < :replay_generation "
        "OR (#replay_generation = :replay_generation AND (attribute_not_exists(#pk)))"
    )
    assert put.values == {":replay_generation": 2}
    assert put.names == {"#pk": schema.PK, "#replay_generation": schema.GENERATION}


def test_a_replayed_update_sets_its_generation_and_keeps_its_order_within_one():
    [update] = generations.stamp((STATUS,), 1)

    assert isinstance(update, Update)
    assert update.expression == "SET #replay_generation = :replay_generation, #rank = :rank"
    assert update.condition.endswith(
        "(#replay_generation = :replay_generation AND (attribute_not_exists(#rank) OR #rank < :rank))"
    )
    without_set = generations.stamp(
        (Update(Table.STATE, {schema.PK: "c"}, "ADD #n :one", "#n < :ten", standalone=True),), 1
    )
    assert without_set[0].expression == "ADD #n :one SET #replay_generation = :replay_generation"


def test_writes_that_are_not_keyed_are_left_alone():
    unconditional = Put(Table.DATA, {schema.PK: "a", schema.SK: "b"}, standalone=True)
    bound = Put(
        Table.DATA, {schema.PK: "a", schema.SK: "c"}, condition="attribute_not_exists(#pk)", names={"#pk": "pk"}
    )
    check = Check(Table.STATE, {schema.PK: "m"}, "#v = :v", standalone=True)

    assert generations.stamp((unconditional, bound, check), 4) == (unconditional, bound, check)


def test_a_write_using_the_generations_names_is_refused():
    clash = Put(
        Table.DATA,
        {schema.PK: "a", schema.SK: "b"},
        condition="attribute_not_exists(#replay_generation)",
        names={"#replay_generation": "x"},
        standalone=True,
    )
    with pytest.raises(ValueError, match="they are the consumer's"):
        generations.stamp((clash,), 1)


def test_the_replayed_done_mark_needs_a_lower_generation_and_sets_it():
    mark = marks.finish(
        _row(schema.RowStatus.DONE),
        _envelope(2),
        status=schema.RowStatus.DONE,
        now=5.0,
        attempts=0,
        marker_ttl_seconds=60,
    )

    assert isinstance(mark, Update)
    assert mark.condition == (
        "#status = :read AND (attribute_not_exists(#replay_generation) OR #replay_generation < :replay_generation)"
    )
    assert "#replay_generation = :replay_generation" in mark.expression
    assert mark.values[":replay_generation"] == 2
    assert mark.on_conflict is OnConflict.FAIL


def test_generation_zeros_done_mark_is_the_status_compare_and_set_alone():
    mark = marks.finish(
        _row(schema.RowStatus.QUEUED),
        _envelope(),
        status=schema.RowStatus.DONE,
        now=5.0,
        attempts=0,
        marker_ttl_seconds=60,
    )

    assert isinstance(mark, Update)
    assert mark.condition == "#status = :read"
    assert schema.GENERATION not in mark.names.values()


def test_a_replay_that_fails_leaves_a_row_an_earlier_generation_finished_as_it_was():
    for status in (schema.RowStatus.FAILED, schema.RowStatus.EXPIRED):
        assert (
            marks.finish(
                _row(schema.RowStatus.DONE), _envelope(1), status=status, now=5.0, attempts=1, marker_ttl_seconds=60
            )
            is None
        )
    # but one on a row still queued is marked as any failure is, without its generation
    mark = marks.finish(
        _row(schema.RowStatus.QUEUED),
        _envelope(1),
        status=schema.RowStatus.FAILED,
        now=5.0,
        attempts=1,
        marker_ttl_seconds=60,
    )
    assert isinstance(mark, Update)
    assert schema.GENERATION not in mark.names.values()
