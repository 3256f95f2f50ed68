"""The same job done the usual way: Powertools' BatchProcessor plus its idempotency utility.

Each record: Powertools writes an INPROGRESS record (conditional PutItem), the function loads the
delivery from its log row, stores the message (conditional PutItem, a repeat is ignored) and marks
the row done (UpdateItem), then Powertools writes the COMPLETED record (UpdateItem). Four separate
writes, none atomic with another: a crash between the effect and COMPLETED runs the effect again
once the in-progress record expires, which is safe here only because this effect happens to be
idempotent on its own.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping
from typing import Any

from botocore.exceptions import ClientError

IDEMPOTENCY_TABLE = "idempotency"


def create_idempotency_table(dynamodb: Any) -> None:
    dynamodb.create_table(
        TableName=IDEMPOTENCY_TABLE,
        BillingMode="PAY_PER_REQUEST",
        AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "S"}],
        KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
    )


def make_handler(dynamodb: Any, store_message: Callable[[dict[str, Any]], dict[str, Any]]) -> Callable[..., Any]:
    """`store_message(envelope)` does the task's work with `dynamodb` and returns a small result."""
    from aws_lambda_powertools.utilities.batch import BatchProcessor, EventType, process_partial_response
    from aws_lambda_powertools.utilities.idempotency import (
        DynamoDBPersistenceLayer,
        IdempotencyConfig,
        idempotent_function,
    )

    persistence = DynamoDBPersistenceLayer(table_name=IDEMPOTENCY_TABLE, boto3_client=dynamodb)
    config = IdempotencyConfig(event_key_jmespath="id", expires_after_seconds=3600)

    @idempotent_function(data_keyword_argument="envelope", persistence_store=persistence, config=config)
    def process(envelope: dict[str, Any]) -> dict[str, Any]:
        return store_message(envelope)

    processor = BatchProcessor(event_type=EventType.SQS)

    def record_handler(record: Any) -> Any:
        return process(envelope=json.loads(record.body))

    def handler(event: dict[str, Any], context: Any) -> Any:
        return process_partial_response(
            event=event, record_handler=record_handler, processor=processor, context=context
        )

    return handler


def conditional_put(dynamodb: Any, **kwargs: Any) -> bool:
    try:
        dynamodb.put_item(**kwargs)
    except ClientError as exc:
        if exc.response.get("Error", {}).get("Code") == "ConditionalCheckFailedException":
            return False
        raise
    return True


def store_message(
    dynamodb: Any, table: str, pk: str, message: Mapping[str, Any], *, expires_at: int | None = None
) -> bool:
    """The task's effect in the common design: a WhatsApp message stored once (a repeat is ignored),
    until `expires_at` (epoch seconds, DynamoDB's TTL) when given."""
    item = {
        "pk": {"S": pk},
        "sk": {"S": "message"},
        "text": {"S": message["text"]["body"]},
        "sender": {"S": message["from"]},
        "stored_at": {"N": str(time.time())},
    }
    if expires_at is not None:
        item["expires_at"] = {"N": str(expires_at)}
    return conditional_put(dynamodb, TableName=table, Item=item, ConditionExpression="attribute_not_exists(pk)")
