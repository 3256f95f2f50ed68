"""Lambda's SQS event source mapping contract, in one place: the event it builds from received
messages, how it reads a partial batch response, and what it deletes afterwards.

With ReportBatchItemFailures, everything not reported is deleted. A failed invocation (a crash, a
timeout: a response given after the deadline is lost) or a malformed response deletes nothing, so
every message of the batch comes back after its visibility timeout. The local runtime's poller,
the consumer tests' harness and the benchmarks all play the mapping through this module; the
poller adds its own long polls, batching window and concurrency around it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Protocol

MAX_MESSAGES = 10
"""SQS's limit for one ReceiveMessage and one DeleteMessageBatch."""


class Outcome(Protocol):
    """What an invocation gave back: `ok` is False for a crash or a timeout, and `result` is the
    handler's response. The runtime's `functions.Invocation` is one."""

    @property
    def ok(self) -> bool: ...

    @property
    def result(self) -> Any: ...


@dataclass(frozen=True)
class Invoked:
    result: Any = None
    ok: bool = True


Invoke = Callable[[dict[str, Any]], Outcome]


@dataclass(frozen=True)
class Settled:
    messages: list[dict[str, Any]]
    """The batch as received; empty when the receive found nothing (then nothing was invoked)."""
    outcome: Outcome | None
    failed: frozenset[str] | None
    """Message ids left on the queue as reported failures; None when the whole batch failed."""
    deleted: tuple[str, ...] = ()
    undeleted: tuple[str, ...] = ()
    """Ids whose deletion SQS refused (a stale receipt handle): they come back."""
    delete_requests: int = 0

    @property
    def invoked(self) -> bool:
        return self.outcome is not None

    @property
    def malformed(self) -> bool:
        """The function answered, but with a response Lambda treats as a failure of the batch."""
        return self.outcome is not None and self.outcome.ok and self.failed is None


def record(message: dict[str, Any], queue_arn: str) -> dict[str, Any]:
    """One record of the SQS event, from a message as ReceiveMessage returned it."""
    return {
        "messageId": message["MessageId"],
        "receiptHandle": message["ReceiptHandle"],
        "body": message["Body"],
        "attributes": dict(message.get("Attributes", {})),
        "messageAttributes": {
            name: {
                "stringValue": value.get("StringValue"),
                "binaryValue": value.get("BinaryValue"),
                "stringListValues": [],
                "binaryListValues": [],
                "dataType": value.get("DataType", "String"),
            }
            for name, value in message.get("MessageAttributes", {}).items()
        },
        "md5OfBody": message.get("MD5OfBody", ""),
        "eventSource": "aws:sqs",
        "eventSourceARN": queue_arn,
        "awsRegion": queue_arn.split(":")[3],
    }


def sqs_event(messages: Iterable[dict[str, Any]], queue_arn: str) -> dict[str, Any]:
    """The event Lambda hands an SQS-triggered function for these received messages."""
    return {"Records": [record(m, queue_arn) for m in messages]}


def failed_ids(response: Any, messages: Iterable[dict[str, Any]]) -> frozenset[str] | None:
    """Message ids the function reported as failed; None for a response Lambda would treat as a
    failure of the whole batch (not a dict, an item without a known itemIdentifier)."""
    if response is None:
        return frozenset()
    if not isinstance(response, dict):
        return None
    items = response.get("batchItemFailures", [])
    if items is None:
        return frozenset()
    if not isinstance(items, list):
        return None
    ids = {m["MessageId"] for m in messages}
    failed = set()
    for item in items:
        identifier = item.get("itemIdentifier") if isinstance(item, dict) else None
        if not identifier or identifier not in ids:
            return None
        failed.add(identifier)
    return frozenset(failed)


def receive(
    sqs: Any, queue_url: str, max_messages: int, *, wait_seconds: int = 0, visibility: int | None = None
) -> list[dict[str, Any]]:
    """One ReceiveMessage, asking for every attribute, as the mapping does."""
    kwargs: dict[str, Any] = {
        "QueueUrl": queue_url,
        "MaxNumberOfMessages": max_messages,
        "WaitTimeSeconds": wait_seconds,
        "AttributeNames": ["All"],
        "MessageSystemAttributeNames": ["All"],
        "MessageAttributeNames": ["All"],
    }
    if visibility is not None:
        kwargs["VisibilityTimeout"] = visibility
    return sqs.receive_message(**kwargs).get("Messages", [])


def settle(
    sqs: Any,
    queue_url: str,
    messages: list[dict[str, Any]],
    outcome: Outcome,
    *,
    report_failures: bool = True,
) -> Settled:
    """Delete what the invocation finished: all of the batch but its reported failures."""
    if not outcome.ok:
        return Settled(messages, outcome, None)
    failed = failed_ids(outcome.result, messages) if report_failures else frozenset()
    if failed is None:
        return Settled(messages, outcome, None)
    done = [m for m in messages if m["MessageId"] not in failed]
    deleted: list[str] = []
    undeleted: list[str] = []
    requests = 0
    for start in range(0, len(done), MAX_MESSAGES):
        chunk = done[start : start + MAX_MESSAGES]
        response = sqs.delete_message_batch(
            QueueUrl=queue_url,
            Entries=[{"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(chunk)],
        )
        requests += 1
        refused = {int(entry["Id"]) for entry in response.get("Failed", [])}
        for i, m in enumerate(chunk):
            (undeleted if i in refused else deleted).append(m["MessageId"])
    return Settled(messages, outcome, failed, tuple(deleted), tuple(undeleted), requests)


def deliver(
    sqs: Any,
    queue_url: str,
    queue_arn: str,
    messages: list[dict[str, Any]],
    invoke: Invoke,
    *,
    report_failures: bool = True,
) -> Settled:
    """Invoke the function with this batch's event, then settle the batch by its outcome."""
    outcome = invoke(sqs_event(messages, queue_arn))
    return settle(sqs, queue_url, messages, outcome, report_failures=report_failures)


def poll_once(
    sqs: Any,
    queue_url: str,
    queue_arn: str,
    batch_size: int,
    invoke: Invoke,
    *,
    visibility: int | None = None,
    report_failures: bool = True,
) -> Settled:
    """Receive one batch (no long poll), invoke, settle. An empty receive invokes nothing, as
    Lambda never invokes a function with an empty batch."""
    messages = receive(sqs, queue_url, min(batch_size, MAX_MESSAGES), visibility=visibility)
    if not messages:
        return Settled(messages, None, frozenset())
    return deliver(sqs, queue_url, queue_arn, messages, invoke, report_failures=report_failures)
