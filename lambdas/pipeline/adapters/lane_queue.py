"""A lane's SQS queue (and its dead-letter queue): every SQS call the pipeline makes on one.

- Sending (`QueueSender`): the doors, the sweeper and the erasure requests send envelopes; every
  message carries `MessageGroupId` = tenant, which on a standard queue turns on SQS fair queues,
  so one tenant's backlog does not raise every other tenant's dwell time.
- The consumer's calls beyond what the event source mapping does (receive and delete):
  `SqsLaneQueue`. Per batch at most one SendMessageBatch per ten deferrals (or per 256 KiB of
  them, SQS's limit on a batch's payload: `send_batch`), one
  ChangeMessageVisibilityBatch per ten retries, and a SendMessage per dead letter (rare, and each
  carries its own attributes). A follow-up goes to its own lane's queue, or to the lane its
  envelope names when the consumer was given that lane's queue (the messages lane's auto-reply
  turns go to the ai lane's).
- Reading it (`depth`, `max_receives`): admission, the sweeper and `lanectl` all read a queue's
  depth here, one GetQueueAttributes each time.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pipeline.domain.envelope import SQS_BATCH_BYTES, SQS_BATCH_ENTRIES, Envelope, Outgoing

if TYPE_CHECKING:
    # Only annotated: the door sends no follow-ups and need not load the consumer's work rules.
    from pipeline.domain.consumer.work import FollowUp

MAX_DELAY_SECONDS = 900

BATCH_LIMIT = SQS_BATCH_ENTRIES
BATCH_BYTES = SQS_BATCH_BYTES
"""And at most this much payload in one call. Ten jobs carrying their payloads inline (up to
200 KiB each) are several calls' worth."""
DEPTH_ATTRIBUTES = (
    "ApproximateNumberOfMessages",
    "ApproximateNumberOfMessagesNotVisible",
    "ApproximateNumberOfMessagesDelayed",
)


@dataclass(frozen=True)
class Depth:
    """What a queue holds, approximately, as SQS counts it."""

    visible: int
    in_flight: int
    delayed: int
    """Deferred messages wait here: their rows are waiting, not lost."""

    @property
    def total(self) -> int:
        return self.visible + self.in_flight + self.delayed


def depth(sqs: Any, url: str) -> Depth:
    """One GetQueueAttributes; raises botocore errors to the caller, which decides what an
    unknown depth means (admission admits, the sweeper waits, lanectl says so)."""
    attributes = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=list(DEPTH_ATTRIBUTES))["Attributes"]
    return Depth(
        visible=int(attributes.get("ApproximateNumberOfMessages", 0)),
        in_flight=int(attributes.get("ApproximateNumberOfMessagesNotVisible", 0)),
        delayed=int(attributes.get("ApproximateNumberOfMessagesDelayed", 0)),
    )


def max_receives(sqs: Any, url: str) -> int | None:
    """The deployed redrive policy's maxReceiveCount (the catalogue may have changed since)."""
    raw = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["RedrivePolicy"])["Attributes"].get("RedrivePolicy")
    if not raw:
        return None
    return int(json.loads(raw)["maxReceiveCount"])


@dataclass(frozen=True)
class SendFailure:
    envelope: Envelope
    code: str
    message: str


def _attributes(attributes: Mapping[str, str] | None) -> dict[str, Any]:
    return {
        name: {"DataType": "String", "StringValue": value} for name, value in (attributes or {}).items() if value != ""
    }


def _delay(seconds: int) -> int:
    return max(0, min(MAX_DELAY_SECONDS, int(seconds)))


class QueueSender:
    def __init__(self, sqs: Any) -> None:
        self._sqs = sqs

    def send(self, queue_url: str, message: Outgoing) -> str:
        """One SendMessage; returns the message id. Raises botocore errors to the caller, which
        decides whether a failed send loses anything (it never should: the row is the record)."""
        kwargs: dict[str, Any] = {
            "QueueUrl": queue_url,
            "MessageBody": message.envelope.to_json(),
            "MessageGroupId": message.envelope.tenant,
        }
        if message.delay_seconds:
            kwargs["DelaySeconds"] = _delay(message.delay_seconds)
        attributes = _attributes(message.attributes)
        if attributes:
            kwargs["MessageAttributes"] = attributes
        return str(self._sqs.send_message(**kwargs)["MessageId"])

    def send_batch(self, queue_url: str, messages: Sequence[Outgoing]) -> list[SendFailure]:
        """SendMessageBatch in calls of at most ten entries and BATCH_BYTES; returns the entries
        SQS refused (empty when all were accepted). A message larger than a batch goes alone, for
        SQS to take or refuse by its own limit."""
        failures: list[SendFailure] = []
        for chunk in _chunks([(message, _entry(message)) for message in messages]):
            entries = [{**entry, "Id": str(index)} for index, (_, entry) in enumerate(chunk)]
            response = self._sqs.send_message_batch(QueueUrl=queue_url, Entries=entries)
            for failed in response.get("Failed", []):
                message = chunk[int(failed["Id"])][0]
                failures.append(SendFailure(message.envelope, failed.get("Code", ""), failed.get("Message", "")))
        return failures


def _entry(message: Outgoing) -> dict[str, Any]:
    entry: dict[str, Any] = {"MessageBody": message.envelope.to_json(), "MessageGroupId": message.envelope.tenant}
    if message.delay_seconds:
        entry["DelaySeconds"] = _delay(message.delay_seconds)
    attributes = _attributes(message.attributes)
    if attributes:
        entry["MessageAttributes"] = attributes
    return entry


def _entry_bytes(entry: Mapping[str, Any]) -> int:
    """What SQS counts of an entry against a batch's payload: its body and its attributes."""
    size = len(entry["MessageBody"].encode("utf-8", "surrogatepass"))
    for name, attribute in (entry.get("MessageAttributes") or {}).items():
        size += len(name.encode()) + len(attribute["DataType"].encode()) + len(attribute["StringValue"].encode())
    return size


def _chunks(entries: list[tuple[Outgoing, dict[str, Any]]]) -> list[list[tuple[Outgoing, dict[str, Any]]]]:
    chunks: list[list[tuple[Outgoing, dict[str, Any]]]] = []
    size = 0
    for item in entries:
        grows = _entry_bytes(item[1])
        if not chunks or len(chunks[-1]) == BATCH_LIMIT or size + grows > BATCH_BYTES:
            chunks.append([])
            size = 0
        chunks[-1].append(item)
        size += grows
    return chunks


class FollowUpNotSent(RuntimeError):
    """SQS refused a follow-up; the record is retried (nothing was committed yet)."""


class SqsLaneQueue:
    def __init__(self, sqs: Any, queue_url: str, dlq_url: str, others: Mapping[str, str] | None = None) -> None:
        self._sqs = sqs
        self._queue_url = queue_url
        self._dlq_url = dlq_url
        self._others = dict(others or {})
        """Other lanes' queues, by lane name: a follow-up whose envelope names one goes there."""
        self._sender = QueueSender(sqs)

    def send(self, follow_ups: Sequence[FollowUp]) -> None:
        by_queue: dict[str, list[Outgoing]] = {}
        for follow_up in follow_ups:
            url = self._others.get(follow_up.envelope.lane, self._queue_url)
            by_queue.setdefault(url, []).append(Outgoing(follow_up.envelope, delay_seconds=follow_up.delay_seconds))
        refused = [failure for url, outgoing in by_queue.items() for failure in self._sender.send_batch(url, outgoing)]
        if refused:
            codes = ", ".join(sorted({failure.code for failure in refused}))
            raise FollowUpNotSent(f"{len(refused)} follow-up(s) refused by SQS ({codes})")

    def defer(self, items: Sequence[tuple[Envelope, int]]) -> set[int]:
        outgoing = [Outgoing(envelope, delay_seconds=delay) for envelope, delay in items]
        refused = self._sender.send_batch(self._queue_url, outgoing)
        # send_batch reports envelopes; map them back to positions (ids repeat only for true copies).
        positions: set[int] = set()
        for failure in refused:
            for position, (envelope, _) in enumerate(items):
                if envelope is failure.envelope:
                    positions.add(position)
        return positions

    def dead_letter(self, body: str, attributes: Mapping[str, str]) -> None:
        self._sqs.send_message(
            QueueUrl=self._dlq_url,
            MessageBody=body or "(empty body)",
            MessageAttributes={
                name: {"DataType": "String", "StringValue": value} for name, value in attributes.items() if value
            },
        )

    def set_visibility(self, items: Sequence[tuple[str, int]]) -> int:
        refused = 0
        for start in range(0, len(items), BATCH_LIMIT):
            chunk = items[start : start + BATCH_LIMIT]
            response = self._sqs.change_message_visibility_batch(
                QueueUrl=self._queue_url,
                Entries=[
                    {"Id": str(i), "ReceiptHandle": handle, "VisibilityTimeout": int(seconds)}
                    for i, (handle, seconds) in enumerate(chunk)
                ],
            )
            refused += len(response.get("Failed", []))
        return refused
