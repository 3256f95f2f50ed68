"""moto refuses what AWS refuses at AWS's limits (the figures, and how each is measured:
local_aws/aws_limits.py), with AWS's error codes and messages, and writes nothing it refuses.

What moto 5.2.5 did before, probed through boto3:
- Lambda: CreateFunction and UpdateFunctionConfiguration took a 5 KB environment, and so did
  moto's CloudFormation: a template Lambda would refuse deployed locally.
- SQS: a message was measured by its body's characters alone: 600 two-byte characters (1,200
  bytes) and a body at the limit with an attribute went into a 1,024-byte queue. A batch was
  measured by its bodies alone, so one of 1 MiB + 1 byte with its attribute was sent. A batch
  with one entry over the queue's MaximumMessageSize was refused whole, where SQS fails that
  entry and sends the rest. More than 10 entries moto refuses as SQS does.
- DynamoDB: moto measured an item its own way (a number by its characters, a list or map without
  its overhead) against 405,000 bytes, so it refused items of 405,001 to 409,600 bytes that
  DynamoDB takes; an UpdateItem that grew a map or a list past the limit went through, and one
  that set two attributes past it kept the first. TransactGetItems was refused over 25 items,
  AWS's old limit (26 to 100 must work); a transaction over 4 MB was written or read;
  BatchWriteItem took 26 requests, and an oversized item in a batch left the requests before it
  written. Transactions of over 100 writes and batch gets of over 100 keys moto already refused.

The refusals are worded as the services answer them. DynamoDB's refusal of a transaction over
4 MB is the one a TransactWriteItems gets; a TransactGetItems over 4 MB gets the same words, as
what DynamoDB says for a read is not documented.
"""

from __future__ import annotations

import copy
import functools
import threading
from typing import Any

from local_aws import aws_limits

_PATCHED = False
_TRANSACTION = threading.local()


def install() -> None:
    global _PATCHED
    if _PATCHED:
        return
    _lambda_environments()
    _sqs_message_sizes()
    _dynamodb_item_sizes()
    _dynamodb_transactions()
    _dynamodb_batch_writes()
    _PATCHED = True


def _lambda_environments() -> None:
    from moto.awslambda.models import LambdaBackend, LambdaFunction

    create = LambdaBackend.create_function
    update = LambdaFunction.update_configuration

    # moto's CloudFormation creates functions through the backend and updates them through the
    # function, so a template is held to the limit as the API is.
    def create_function(self: Any, spec: dict[str, Any]) -> Any:
        _check_environment(spec.get("Environment"))
        return create(self, spec)

    def update_configuration(self: Any, config_updates: dict[str, Any]) -> Any:
        _check_environment(config_updates.get("Environment"))
        return update(self, config_updates)

    LambdaBackend.create_function = functools.wraps(create)(create_function)  # type: ignore[method-assign]
    LambdaFunction.update_configuration = functools.wraps(update)(update_configuration)  # type: ignore[method-assign]


def _check_environment(environment: dict[str, Any] | None) -> None:
    from moto.awslambda.exceptions import InvalidParameterValueException

    variables = (environment or {}).get("Variables") or {}
    measured = aws_limits.lambda_environment(variables)
    if len(measured.encode("utf-8")) > aws_limits.LAMBDA_ENVIRONMENT_BYTES:
        raise InvalidParameterValueException(
            "Lambda was unable to configure your environment variables because the environment variables you "
            f"have provided exceeded the 4KB limit. String measured: {measured}"
        )


def _sqs_message_sizes() -> None:
    from moto.sqs.exceptions import BatchRequestTooLong, InvalidParameterValue
    from moto.sqs.models import SQSBackend

    send = SQSBackend.send_message
    send_batch = SQSBackend.send_message_batch

    def send_message(self: Any, queue_name: str, message_body: str, *args: Any, **kwargs: Any) -> Any:
        limit = int(self.get_queue(queue_name).maximum_message_size)
        attributes = kwargs.get("message_attributes", args[0] if args else None)
        if aws_limits.sqs_message_bytes(message_body, attributes) > limit:
            raise InvalidParameterValue(f"One or more parameters are invalid. Reason: {_too_long(limit)}")
        return send(self, queue_name, message_body, *args, **kwargs)

    def send_message_batch(self: Any, queue_name: str, entries: dict[str, dict[str, Any]]) -> Any:
        sizes = {
            key: aws_limits.sqs_message_bytes(e["MessageBody"], e.get("MessageAttributes"))
            for key, e in entries.items()
        }
        total = sum(sizes.values())
        if total > aws_limits.SQS_MESSAGE_BYTES:
            raise BatchRequestTooLong(total)
        limit = int(self.get_queue(queue_name).maximum_message_size)
        oversized = {key for key, size in sizes.items() if size > limit}
        ids = [entry["Id"] for entry in entries.values()]
        # A batch moto refuses whole (too many entries, a repeated id) is left for it to refuse.
        if not oversized or len(entries) > aws_limits.SQS_BATCH_ENTRIES or len(set(ids)) < len(ids):
            return send_batch(self, queue_name, entries)
        kept = {key: entry for key, entry in entries.items() if key not in oversized}
        sent, failed = send_batch(self, queue_name, kept) if kept else ([], [])
        failed += [
            {
                "Id": entries[key]["Id"],
                "SenderFault": True,
                "Code": "InvalidParameterValue",
                "Message": f"One or more parameters cannot be validated. Reason: {_too_long(limit)}",
            }
            for key in entries
            if key in oversized
        ]
        return sent, failed

    SQSBackend.send_message = functools.wraps(send)(send_message)  # type: ignore[method-assign]
    SQSBackend.send_message_batch = functools.wraps(send_batch)(send_message_batch)  # type: ignore[method-assign]


def _too_long(limit: int) -> str:
    return f"Message must be shorter than {limit} bytes."


class ValidationError(Exception):
    """An update that grows an item past the limit inside a transaction: DynamoDB cancels the
    transaction with this reason (code `ValidationError`, the class's name, as moto reports a
    reason) rather than refusing the request."""


def _dynamodb_item_sizes() -> None:
    from moto.dynamodb.exceptions import ItemSizeTooLarge, ItemSizeToUpdateTooLarge
    from moto.dynamodb.models import DynamoDBBackend
    from moto.dynamodb.models.dynamo_type import LimitedSizeDict
    from moto.dynamodb.models.table import Table

    # moto's own check measures differently, stops at 405,000 bytes, and walks the whole item on
    # every attribute set: a PutItem of a 2 KB item of 23 attributes took 1.0 ms with it, 0.45 without.
    LimitedSizeDict.__setitem__ = dict.__setitem__  # type: ignore[assignment]
    put = Table.put_item
    update = DynamoDBBackend.update_item

    def put_item(self: Any, item_attrs: dict[str, Any], *args: Any, **kwargs: Any) -> Any:
        if aws_limits.dynamodb_item_bytes(item_attrs) > aws_limits.DYNAMODB_ITEM_BYTES:
            raise ItemSizeTooLarge()
        return put(self, item_attrs, *args, **kwargs)

    def update_item(self: Any, table_name: str, key: dict[str, Any], *args: Any, **kwargs: Any) -> Any:
        try:
            before = copy.deepcopy(self.get_item(table_name, key))
        except Exception:  # an unreadable key fails the update itself, in moto's words
            return update(self, table_name, key, *args, **kwargs)
        item = update(self, table_name, key, *args, **kwargs)
        if aws_limits.dynamodb_item_bytes(item.to_json()["Attributes"]) <= aws_limits.DYNAMODB_ITEM_BYTES:
            return item
        if before is None:
            self.delete_item(table_name, key)
        else:
            self.put_item(table_name, before.to_json()["Attributes"])
        if getattr(_TRANSACTION, "open", False):
            raise ValidationError(ItemSizeToUpdateTooLarge.item_size_to_update_too_large_msg)
        raise ItemSizeToUpdateTooLarge()

    Table.put_item = functools.wraps(put)(put_item)  # type: ignore[method-assign]
    DynamoDBBackend.update_item = functools.wraps(update)(update_item)  # type: ignore[method-assign]


def _dynamodb_transactions() -> None:
    from moto.dynamodb import responses
    from moto.dynamodb.exceptions import MockValidationException
    from moto.dynamodb.models import DynamoDBBackend
    from moto.dynamodb.responses import DynamoHandler

    # moto's own refusal of TransactGetItems held AWS's old 25; over 100 is refused below.
    responses.TRANSACTION_MAX_ITEMS = aws_limits.DYNAMODB_TRANSACTION_ITEMS
    write = DynamoDBBackend.transact_write_items
    get = DynamoHandler.transact_get_items

    def transact_write_items(self: Any, transact_items: list[dict[str, Any]]) -> Any:
        if len(transact_items) > aws_limits.DYNAMODB_TRANSACTION_ITEMS:
            raise MockValidationException(_too_many_transact_items("TransactWriteItem", len(transact_items)))
        payload = sum(_transact_write_bytes(entry) for entry in transact_items)
        if payload > aws_limits.DYNAMODB_TRANSACTION_BYTES:
            raise MockValidationException(_transaction_too_large(payload))
        _TRANSACTION.open = True
        try:
            return write(self, transact_items)
        finally:
            _TRANSACTION.open = False

    def transact_get_items(self: Any) -> Any:
        entries = self.body.get("TransactItems") or []
        if len(entries) > aws_limits.DYNAMODB_TRANSACTION_ITEMS:
            raise MockValidationException(_too_many_transact_items("TransactGetItem", len(entries)))
        payload = 0
        for entry in entries:
            get_request = entry.get("Get") or {}
            try:
                item = self.dynamodb_backend.get_item(get_request["TableName"], get_request["Key"])
            except Exception:  # noqa: S112 (an unreadable request fails the call itself)
                continue
            if item is not None:
                payload += aws_limits.dynamodb_item_bytes(item.to_json()["Attributes"])
        if payload > aws_limits.DYNAMODB_TRANSACTION_BYTES:
            raise MockValidationException(_transaction_too_large(payload))
        return get(self)

    DynamoDBBackend.transact_write_items = functools.wraps(write)(transact_write_items)  # type: ignore[method-assign]
    DynamoHandler.transact_get_items = functools.wraps(get)(transact_get_items)  # type: ignore[method-assign]


def _transact_write_bytes(entry: dict[str, Any]) -> int:
    """What one action adds to a transaction's size: a Put's item, an Update's key and values, a
    Delete's or ConditionCheck's key."""
    ((kind, operation),) = entry.items() if len(entry) == 1 else ((None, {}),)
    if kind == "Put":
        return aws_limits.dynamodb_item_bytes(operation.get("Item") or {})
    size = aws_limits.dynamodb_item_bytes(operation.get("Key") or {})
    if kind == "Update":
        size += aws_limits.dynamodb_item_bytes(operation.get("ExpressionAttributeValues") or {})
    return size


def _dynamodb_batch_writes() -> None:
    from moto.dynamodb.exceptions import ItemSizeTooLarge, MockValidationException
    from moto.dynamodb.responses import DynamoHandler

    batch_write = DynamoHandler.batch_write_item
    limit = aws_limits.DYNAMODB_BATCH_WRITE_REQUESTS

    # Checked before any request is applied: DynamoDB refuses the whole batch, and moto writes
    # its requests one by one.
    def batch_write_item(self: Any) -> Any:
        batches = self.body.get("RequestItems") or {}
        for table_name, requests in batches.items():
            if len(requests) > limit:
                values = ", ".join(_placeholders("WriteRequest", len(requests)))
                raise MockValidationException(
                    f"1 validation error detected: Value '{{{table_name}=[{values}]}}' at 'requestItems' failed to "
                    f"satisfy constraint: Map value must satisfy constraint: [Member must have length less than or "
                    f"equal to {limit}, Member must have length greater than or equal to 1]"
                )
        if sum(len(requests) for requests in batches.values()) > limit:
            raise MockValidationException("Too many items requested for the BatchWriteItem call")
        for requests in batches.values():
            for request in requests:
                item = (request.get("PutRequest") or {}).get("Item") or {}
                if aws_limits.dynamodb_item_bytes(item) > aws_limits.DYNAMODB_ITEM_BYTES:
                    raise ItemSizeTooLarge()
        return batch_write(self)

    DynamoHandler.batch_write_item = functools.wraps(batch_write)(batch_write_item)  # type: ignore[method-assign]


def _placeholders(kind: str, count: int) -> list[str]:
    """DynamoDB's refusal lists the request's members by their Java names; these stand in, as
    moto's own refusals write them."""
    return [f"com.amazonaws.dynamodb.v20120810.{kind}@{268435456 + n:x}" for n in range(1, count + 1)]


def _too_many_transact_items(kind: str, count: int) -> str:
    return (
        f"1 validation error detected: Value '[{', '.join(_placeholders(kind, count))}]' at 'transactItems' failed "
        f"to satisfy constraint: Member must have length less than or equal to {aws_limits.DYNAMODB_TRANSACTION_ITEMS}"
    )


def _transaction_too_large(payload: int) -> str:
    # DynamoDB's message repeats itself, as it answers.
    return (
        "Transaction payload size cannot exceed 4MB. Payload Size: : "
        f"Transaction payload size cannot exceed 4MB. Payload Size: {payload}"
    )
