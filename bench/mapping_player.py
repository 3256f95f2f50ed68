"""Lambda's SQS event source mapping, played in process for the benchmarks: receive a batch, hand
it to the handler as the SQS event Lambda builds, delete what the handler did not report failed.
Until the queue is empty; no long polls, no concurrency, no visibility handling beyond SQS's own."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

BATCH = 10


class FreshInvocation:
    """The Lambda context of an invocation with a whole 30 s timeout ahead of it."""

    @staticmethod
    def get_remaining_time_in_millis() -> int:
        return 30_000


def sqs_event(messages: list[dict[str, Any]], source_arn: str) -> dict[str, Any]:
    """The event Lambda hands an SQS-triggered function for these received messages."""
    region = source_arn.split(":")[3]
    return {
        "Records": [
            {
                "messageId": m["MessageId"],
                "receiptHandle": m["ReceiptHandle"],
                "body": m["Body"],
                "attributes": m.get("Attributes", {}),
                "messageAttributes": {},
                "eventSource": "aws:sqs",
                "eventSourceARN": source_arn,
                "awsRegion": region,
            }
            for m in messages
        ]
    }


@dataclass(frozen=True)
class Drained:
    batches: int
    records: int
    requests: int
    """The mapping's own SQS requests: receives (the last, empty one included) and deletes."""


def drain(
    sqs: Any,
    queue_url: str,
    source_arn: str,
    handler: Callable[[dict[str, Any], Any], Any],
    *,
    batch: int = BATCH,
) -> Drained:
    batches = records = requests = 0
    while True:
        messages = sqs.receive_message(QueueUrl=queue_url, MaxNumberOfMessages=batch, AttributeNames=["All"]).get(
            "Messages", []
        )
        requests += 1
        if not messages:
            return Drained(batches, records, requests)
        batches += 1
        records += len(messages)
        response = handler(sqs_event(messages, source_arn), FreshInvocation())
        failed = {item["itemIdentifier"] for item in response["batchItemFailures"]}
        acked = [m for m in messages if m["MessageId"] not in failed]
        if acked:
            sqs.delete_message_batch(
                QueueUrl=queue_url,
                Entries=[{"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(acked)],
            )
            requests += 1
