"""moto's answers on the hot path, written as JSON directly.

moto 5 builds every answer as a plain dict and then walks the operation's output shape with a
generic serializer, attribute by attribute. For DynamoDB and SQS over their JSON protocol the dict
already is the wire document, except that binary values are bytes (DynamoDB's B and BS, an SQS
message attribute's BinaryValue), which the wire carries as base64. Measured in one process: a
consistent BatchGetItem of ten 1 KB rows took 7.0 ms through the serializer and 2.4 ms as plain
JSON; the serializer was a sixth of the local runtime's CPU under load (py-spy, --gil).

Only the operations listed take this path, only for a dict result over the JSON protocol, and only
if the dict is plain data; anything else (an error, a timestamp, another service or protocol) goes
through moto's serializer as before. tests/unit/runtime/test_moto_results.py checks that a client
reads the same response either way for each operation listed.
"""

from __future__ import annotations

import base64
import json
from typing import Any

OPERATIONS = {
    "dynamodb": frozenset(
        {
            "BatchGetItem",
            "BatchWriteItem",
            "DeleteItem",
            "GetItem",
            "PutItem",
            "Query",
            "Scan",
            "TransactWriteItems",
            "UpdateItem",
        }
    ),
    "sqs": frozenset(
        {
            "ChangeMessageVisibility",
            "ChangeMessageVisibilityBatch",
            "DeleteMessage",
            "DeleteMessageBatch",
            "GetQueueAttributes",
            "GetQueueUrl",
            "ReceiveMessage",
            "SendMessage",
            "SendMessageBatch",
        }
    ),
}
_PATCHED = False
_serialized: Any = None
"""moto's own `ActionResult.execute_result`, kept for everything else (and for the tests)."""


def install() -> None:
    global _PATCHED, _serialized
    if _PATCHED:
        return
    from moto.core.responses import ActionResult
    from moto.core.serialize import JSONSerializer

    original = _serialized = ActionResult.execute_result

    def execute_result(self: Any, context: Any) -> Any:
        body = _plain_json(self.result, context, JSONSerializer)
        if body is None:
            return original(self, context)
        version = context.service_model.metadata.get("jsonVersion", "1.0")
        return 200, {"Content-Type": f"application/x-amz-json-{version}"}, body

    ActionResult.execute_result = execute_result  # type: ignore[method-assign]
    _PATCHED = True


def through_serializer() -> Any:
    """moto's own answer path, as it was before `install`."""
    return _serialized


def _plain_json(result: Any, context: Any, json_serializer: type) -> str | None:
    if not isinstance(result, dict) or context.serializer_class is not json_serializer:
        return None
    if context.operation_model.name not in OPERATIONS.get(context.service_model.service_name, ()):
        return None
    try:
        return json.dumps(result, separators=(",", ":"), default=_blob)
    except TypeError:
        return None


def _blob(value: Any) -> str:
    if isinstance(value, bytes | bytearray):
        return base64.b64encode(value).decode("ascii")
    raise TypeError(f"not plain JSON: {type(value).__name__}")
