"""The item codec (adapters/items.py): every adapter's items, keys and expression values go through
it, so it must write what boto3's own serializer writes, keep a number's text as the adapter gave
it, and refuse what DynamoDB cannot hold before any call is made."""

from __future__ import annotations

from decimal import Decimal
from enum import IntEnum, StrEnum
from types import MappingProxyType
from typing import Any

import boto3
import pytest
from boto3.dynamodb.types import TypeSerializer
from hypothesis import given
from hypothesis import strategies as st

from pipeline.adapters import items
from tests.support.aws import REGION

_json_leaves = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(10**40), max_value=10**40)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8)
    | st.binary(min_size=1, max_size=8)
)
_values = st.recursive(
    _json_leaves,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=4), inner, max_size=4),
    max_leaves=12,
)


def _as_boto3_wants(value: Any) -> Any:
    """What boto3's serializer takes for `value`: floats as the Decimal of their repr."""
    if isinstance(value, float):
        return Decimal(repr(value))
    if isinstance(value, list):
        return [_as_boto3_wants(v) for v in value]
    if isinstance(value, dict):
        return {k: _as_boto3_wants(v) for k, v in value.items()}
    return value


def _as_read_back(value: Any) -> Any:
    """What a value reads back as: every number a Decimal."""
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, int | float):
        return Decimal(repr(value))
    if isinstance(value, list):
        return [_as_read_back(v) for v in value]
    if isinstance(value, dict):
        return {k: _as_read_back(v) for k, v in value.items()}
    return value


@given(_values)
def test_a_value_is_written_as_boto3_writes_it_and_reads_back_as_itself(value):
    # Given any JSON-like value, with bytes, and what boto3's serializer makes of it
    try:
        expected = TypeSerializer().serialize(_as_boto3_wants(value))
    except ArithmeticError:  # a number DynamoDB cannot hold: too many digits, too large or small
        # Then the codec refuses it too
        with pytest.raises(ValueError, match="38 digits"):
            items.to_attribute(value)
        return
    # When it is encoded and decoded
    encoded = items.to_attribute(value)
    # Then the wire form is boto3's, and it reads back with its numbers as Decimals
    assert encoded == expected
    assert items.from_attribute(encoded) == _as_read_back(value)


@pytest.mark.parametrize(
    ("value", "wire"),
    [
        ("text", {"S": "text"}),
        (True, {"BOOL": True}),
        (False, {"BOOL": False}),
        (None, {"NULL": True}),
        (7, {"N": "7"}),
        (-0, {"N": "0"}),
        (1.1, {"N": "1.1"}),
        (1733212345.123456, {"N": "1733212345.123456"}),
        (1e16, {"N": "1E+16"}),
        (1e-7, {"N": "1E-7"}),
        (Decimal("1733212345.100"), {"N": "1733212345.100"}),
        (b"\x00\xff", {"B": b"\x00\xff"}),
        (bytearray(b"ab"), {"B": bytearray(b"ab")}),
        ({"b", "a"}, {"SS": ["a", "b"]}),
        (frozenset({b"\x02", b"\x01"}), {"BS": [b"\x01", b"\x02"]}),
        ({3, 1.5, Decimal("2")}, {"NS": ["1.5", "2", "3"]}),
        ([1, "a"], {"L": [{"N": "1"}, {"S": "a"}]}),
        ((1, "a"), {"L": [{"N": "1"}, {"S": "a"}]}),
        ({"k": [None]}, {"M": {"k": {"L": [{"NULL": True}]}}}),
        (MappingProxyType({1: "x"}), {"M": {"1": {"S": "x"}}}),
    ],
)
def test_each_type_has_its_tag_and_its_text(value, wire):
    assert items.to_attribute(value) == wire


class _Status(StrEnum):
    QUEUED = "queued"


class _Count(IntEnum):
    THREE = 3


def test_a_subclass_is_written_as_its_base_type():
    assert items.to_item({"s": _Status.QUEUED, "n": _Count.THREE}) == {"s": {"S": "queued"}, "n": {"N": "3"}}


def test_milliseconds_keep_exactly_three_decimals():
    # The webhook log's and the job rows' times: as many bytes as f"{at:.3f}" always stored
    assert items.to_attribute(items.Milliseconds(1733212345.1)) == {"N": "1733212345.100"}
    assert items.to_attribute(items.Milliseconds(1733212345.99951)) == {"N": "1733212346.000"}
    assert items.to_attribute(items.Milliseconds(12)) == {"N": "12.000"}
    assert items.to_item({"at": items.Milliseconds(0.0004)}) == {"at": {"N": "0.000"}}


@pytest.mark.parametrize("at", [float("nan"), float("inf"), -float("inf")])
def test_milliseconds_of_no_time_are_refused(at):
    with pytest.raises(ValueError, match="finite"):
        items.Milliseconds(at)


def test_a_key_is_one_attribute():
    assert items.key("pk", "pause#messages") == {"pk": {"S": "pause#messages"}}


def test_a_read_decodes_one_attribute_or_gives_the_default():
    raw = {"id": {"S": "wh-1"}, "parts": {"N": "3"}, "body": {"B": b"x"}, "linked": {"SS": ["a"]}}
    assert items.read(raw, "id") == "wh-1"
    assert items.read(raw, "parts") == Decimal(3)
    assert items.read(raw, "body") == b"x"
    assert items.read(raw, "linked") == {"a"}
    assert items.read(raw, "missing") is None
    assert items.read(raw, "missing", 1) == 1
    assert items.read(None, "id", "none") == "none"


def test_from_item_reads_every_type_and_none_is_none():
    raw = {
        "s": {"S": "x"},
        "n": {"N": "1.50"},
        "b": {"B": b"\x01"},
        "t": {"BOOL": True},
        "z": {"NULL": True},
        "ss": {"SS": ["a", "b"]},
        "ns": {"NS": ["1", "2.5"]},
        "bs": {"BS": [b"\x01", b"\x02"]},
        "l": {"L": [{"S": "x"}, {"N": "2"}]},
        "m": {"M": {"k": {"BOOL": False}}},
    }
    assert items.from_item(raw) == {
        "s": "x",
        "n": Decimal("1.50"),
        "b": b"\x01",
        "t": True,
        "z": None,
        "ss": {"a", "b"},
        "ns": {Decimal(1), Decimal("2.5")},
        "bs": {b"\x01", b"\x02"},
        "l": ["x", Decimal(2)],
        "m": {"k": False},
    }
    assert type(items.from_item(raw)["bs"].pop()) is bytes
    assert items.from_item(None) is None


@pytest.mark.parametrize(
    ("value", "named"),
    [(object(), "object"), (1j, "complex"), ({1, "a"}, "int, str"), ({True}, "bool")],
)
def test_a_value_dynamodb_has_no_type_for_is_refused_naming_its_type(value, named):
    with pytest.raises(TypeError, match=named):
        items.to_item({"a": "fine", "b": value})


@pytest.mark.parametrize("value", [float("nan"), float("inf"), -float("inf"), Decimal("NaN"), Decimal("-Infinity")])
def test_a_number_dynamodb_cannot_hold_is_refused(value):
    with pytest.raises(ValueError, match="finite"):
        items.to_attribute(value)


@pytest.mark.parametrize("value", [10**40 + 1, Decimal("1E+127"), Decimal("-1E-166"), 1e-200, {1, 10**39 + 7}])
def test_a_number_beyond_dynamodbs_digits_or_range_is_refused(value):
    with pytest.raises(ValueError, match="38 digits"):
        items.to_attribute(value)


def test_an_empty_set_is_refused():
    with pytest.raises(ValueError, match="empty sets"):
        items.to_attribute(set())


@pytest.mark.parametrize(
    ("raw", "error", "named"),
    [({"X": "1"}, TypeError, "'X'"), ({}, ValueError, r"\[\]"), ({"S": "a", "N": "1"}, ValueError, "'N', 'S'")],
)
def test_an_attribute_that_is_not_one_typed_value_is_refused(raw, error, named):
    with pytest.raises(error, match=named):
        items.from_item({"a": raw})


def test_an_item_round_trips_through_dynamodb_with_its_text_kept(aws):
    # Given a table, and an item with every type the adapters write
    dynamodb = boto3.client("dynamodb", region_name=REGION)
    dynamodb.create_table(
        TableName="codec",
        KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
    )
    written = {
        "id": "wh-1",
        "received_at": items.Milliseconds(1733212345.1),
        "seen_at": 1733212345.123456,
        "count": 3,
        "body": b"\x00raw",
        "hashes": {b"\x02" * 16, b"\x01" * 16},
        "linked": {"b", "a"},
        "payload": {"a": [1, 2.5, True, None, "x"]},
    }
    # When it is put and read back
    dynamodb.put_item(TableName="codec", Item=items.to_item(written))
    raw = dynamodb.get_item(TableName="codec", Key=items.key("id", "wh-1"), ConsistentRead=True)["Item"]
    # Then each value is as written, the stored time with its three decimals
    assert raw["received_at"] == {"N": "1733212345.100"}
    assert items.from_item(raw) == {
        **written,
        "received_at": Decimal("1733212345.100"),
        "seen_at": Decimal("1733212345.123456"),
        "payload": {"a": [Decimal(1), Decimal("2.5"), True, None, "x"]},
    }
