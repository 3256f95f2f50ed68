"""AWS's size and count limits that the emulator enforces, and how AWS measures each.

moto lets through requests AWS refuses: a local run could then write an item, send a batch or
deploy a function that the first real deploy or the first real request refuses. The emulator
(local_aws/moto_limits.py) refuses them as AWS does, with AWS's error codes and messages, so a
limit is met locally first. The figures and measures here are AWS's own, as documented:

- Lambda: a function's environment variables, as a whole, at most 4 KB (4,096 bytes). Lambda
  measures them as one JSON object, `{"NAME":"value",...}` with no spaces, which its refusal
  quotes back ("String measured: ..."): quotes, colons, commas and the escapes of a JSON value's
  own quotes count, not only the names and values.
- SQS: a message, its body and every message attribute's name, data type and value (UTF-8
  bytes), at most the queue's MaximumMessageSize (default and largest 1 MiB, 1,048,576 bytes,
  since 2025); a SendMessageBatch's messages together at most 1 MiB, whatever the queue's
  MaximumMessageSize; at most 10 entries a batch (moto already refuses more).
- DynamoDB: an item at most 400 KB (409,600 bytes), measured as DynamoDB documents it: names and
  values in UTF-8 bytes, binaries raw, a number one byte per two significant digits plus one, a
  list or map 3 bytes plus one a member; a transaction (TransactWriteItems, TransactGetItems) at
  most 100 items and 4 MB (4,194,304 bytes) in all; a BatchWriteItem at most 25 requests
  (BatchGetItem's 100 keys moto already refuses).

Two measures are this module's reading where AWS's documents stop: a transaction's size is the
items it puts plus the keys (and an update's values) of the rest, and a non-ASCII character in a
function's environment counts as its UTF-8 bytes, unescaped (no environment here has one).
"""

from __future__ import annotations

import base64
from collections.abc import Mapping
from decimal import Decimal, InvalidOperation
from typing import Any

# How Lambda measures a function's environment: one rule for synthesis and the local runtime.
from stacks.environment_size import lambda_environment, lambda_environment_bytes  # noqa: F401

LAMBDA_ENVIRONMENT_BYTES = 4096
SQS_MESSAGE_BYTES = 1_048_576
"""The largest MaximumMessageSize, its default, and what a whole batch may carry."""
SQS_BATCH_ENTRIES = 10
DYNAMODB_ITEM_BYTES = 400 * 1024
DYNAMODB_TRANSACTION_ITEMS = 100
DYNAMODB_TRANSACTION_BYTES = 4 * 1024 * 1024
DYNAMODB_BATCH_WRITE_REQUESTS = 25

_LIST_OR_MAP_BYTES = 3
_MEMBER_BYTES = 1


def sqs_message_bytes(body: str, attributes: Mapping[str, Mapping[str, Any]] | None = None) -> int:
    """A message's size as SQS counts it against MaximumMessageSize: body and attributes."""
    size = len(body.encode("utf-8"))
    for name, attribute in (attributes or {}).items():
        size += len(name.encode("utf-8")) + len(str(attribute.get("DataType", "")).encode("utf-8"))
        if "StringValue" in attribute:
            size += len(str(attribute["StringValue"]).encode("utf-8"))
        if "BinaryValue" in attribute:
            size += _binary_bytes(attribute["BinaryValue"])
    return size


def dynamodb_item_bytes(item: Mapping[str, Mapping[str, Any]]) -> int:
    """An item's size (attribute name to typed value, as the low-level API writes it)."""
    return sum(len(name.encode("utf-8")) + dynamodb_value_bytes(value) for name, value in item.items())


def dynamodb_value_bytes(value: Mapping[str, Any]) -> int:
    ((kind, content),) = value.items()
    if kind == "S":
        return len(content.encode("utf-8"))
    if kind == "N":
        return _number_bytes(content)
    if kind == "B":
        return _binary_bytes(content)
    if kind in ("BOOL", "NULL"):
        return 1
    if kind == "SS":
        return sum(len(member.encode("utf-8")) for member in content)
    if kind == "NS":
        return sum(_number_bytes(member) for member in content)
    if kind == "BS":
        return sum(_binary_bytes(member) for member in content)
    if kind == "L":
        return _LIST_OR_MAP_BYTES + sum(_MEMBER_BYTES + dynamodb_value_bytes(member) for member in content)
    if kind == "M":
        return _LIST_OR_MAP_BYTES + sum(
            _MEMBER_BYTES + len(name.encode("utf-8")) + dynamodb_value_bytes(member) for name, member in content.items()
        )
    raise ValueError(f"not a DynamoDB attribute value: {kind}")


def _number_bytes(number: str) -> int:
    try:
        digits = Decimal(number).normalize().as_tuple().digits
    except InvalidOperation:  # moto refuses a malformed number itself; its text stands in meanwhile
        return len(number)
    return (len(digits) + 1) // 2 + 1


def _binary_bytes(value: Any) -> int:
    # A binary counts raw, as AWS counts it: decoded if it comes still in its wire form, base64.
    if isinstance(value, bytes | bytearray):
        return len(value)
    return len(base64.b64decode(value))
