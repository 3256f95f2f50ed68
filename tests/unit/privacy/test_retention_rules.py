"""The expiry rules on their own: when an item goes, and how the consumer stamps the tasks' writes."""

from __future__ import annotations

import pytest

from pipeline import schema
from pipeline.domain import retention
from pipeline.domain.consumer import expiries
from pipeline.domain.effects import Check, Put, Table, Update

DAY = 86400
NOW = 1_800_000_000.5


def test_an_item_is_kept_its_period_from_now_or_from_a_later_deadline():
    assert retention.expiry(NOW, 7 * DAY) == 1_800_000_001 + 7 * DAY
    # A job due in ten days is kept its period after the deadline, never deleted before it
    assert retention.expiry(NOW, 30 * DAY, not_before=NOW + 10 * DAY) == 1_800_000_001 + 40 * DAY
    # A deadline already past counts from now
    assert retention.expiry(NOW, 30 * DAY, not_before=NOW - DAY) == 1_800_000_001 + 30 * DAY


def test_a_put_gets_the_effect_expiry_and_one_kept_longer_is_cut_to_it():
    plain = Put(Table.DATA, {schema.PK: "a", schema.SK: "b", "text": "hi"})
    longer = Put(Table.DATA, {schema.PK: "c", schema.SK: "d", schema.TTL: 2_000_000_000})
    shorter = Put(Table.STATE, {schema.PK: "e", schema.TTL: 1_800_000_100})

    stamped = expiries.stamp((plain, longer, shorter), 1_900_000_000)

    assert [write.item[schema.TTL] for write in stamped] == [1_900_000_000, 1_900_000_000, 1_800_000_100]
    assert stamped[0].item["text"] == "hi"


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        (
            "SET #status = :status",
            "SET #retention_ttl = if_not_exists(#retention_ttl, :retention_ttl), #status = :status",
        ),
        (
            "ADD #pages :one SET #updated = :now",
            "ADD #pages :one SET #retention_ttl = if_not_exists(#retention_ttl, :retention_ttl), #updated = :now",
        ),
        ("ADD #pages :one", "ADD #pages :one SET #retention_ttl = if_not_exists(#retention_ttl, :retention_ttl)"),
    ],
)
def test_an_update_sets_the_expiry_only_on_the_item_it_creates(expression, expected):
    update = Update(Table.DATA, {schema.PK: "a", schema.SK: "b"}, expression, names={"#status": "status"})

    (stamped,) = expiries.stamp((update,), 1_900_000_000)

    assert stamped.expression == expected
    assert stamped.names == {"#status": "status", "#retention_ttl": schema.TTL}
    assert stamped.values == {":retention_ttl": 1_900_000_000}


def test_writes_that_set_their_own_expiry_or_are_not_the_tasks_are_left_alone():
    own = Update(
        Table.STATE, {schema.PK: "m"}, "SET #t = :t, #ttl = :ttl", names={"#t": "t", "#ttl": schema.TTL}, values={}
    )
    check = Check(Table.STATE, {schema.PK: "m"}, "#t = :t", names={"#t": "t"})
    row = Update(Table.JOBS, {schema.ID: "job-1"}, "SET #s = :s", names={"#s": "status"})

    assert expiries.stamp((own, check, row), 1_900_000_000) == (own, check, row)


def test_an_update_may_not_take_the_consumers_placeholders():
    clash = Update(
        Table.DATA, {schema.PK: "a", schema.SK: "b"}, "SET #retention_ttl = :x", names={"#retention_ttl": "x"}
    )

    with pytest.raises(ValueError, match="#retention_ttl"):
        expiries.stamp((clash,), 1_900_000_000)
