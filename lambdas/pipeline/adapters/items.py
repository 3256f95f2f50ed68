"""Plain Python values to and from DynamoDB's typed wire format, for the consumer's adapters.

Floats go through `str` into Decimal (DynamoDB numbers are decimals, and `Decimal(1.1)` would
store 1.100000000000000088...). Reads return Decimals for numbers and bytes for binaries.
"""

from __future__ import annotations

from collections.abc import Mapping
from decimal import Decimal
from typing import Any

from boto3.dynamodb.types import Binary, TypeDeserializer, TypeSerializer

_serializer = TypeSerializer()
_deserializer = TypeDeserializer()


def _decimals(value: Any) -> Any:
    if isinstance(value, bool):
        return value
    if isinstance(value, float):
        return Decimal(str(value))
    if isinstance(value, Mapping):
        return {str(k): _decimals(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_decimals(v) for v in value]
    return value


def to_attribute(value: Any) -> dict[str, Any]:
    return _serializer.serialize(_decimals(value))


def to_item(values: Mapping[str, Any]) -> dict[str, Any]:
    return {name: to_attribute(value) for name, value in values.items()}


def _bytes(value: Any) -> Any:
    if isinstance(value, Binary):
        return value.value
    if isinstance(value, dict):
        return {k: _bytes(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_bytes(v) for v in value]
    return value


def from_item(raw: Mapping[str, Any] | None) -> dict[str, Any] | None:
    if raw is None:
        return None
    return {name: _bytes(_deserializer.deserialize(value)) for name, value in raw.items()}
