"""Sending envelopes to lane queues.

Every message carries `MessageGroupId` = tenant: on a standard queue that turns on SQS fair
queues, which keep one tenant's backlog from raising every other tenant's dwell time.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pipeline.domain.envelope import Envelope, Outgoing

MAX_DELAY_SECONDS = 900
SEND_BATCH_LIMIT = 10


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
        """SendMessageBatch in chunks of ten; returns the entries SQS refused (empty when all
        were accepted)."""
        failures: list[SendFailure] = []
        for start in range(0, len(messages), SEND_BATCH_LIMIT):
            chunk = messages[start : start + SEND_BATCH_LIMIT]
            entries = []
            for index, message in enumerate(chunk):
                entry: dict[str, Any] = {
                    "Id": str(index),
                    "MessageBody": message.envelope.to_json(),
                    "MessageGroupId": message.envelope.tenant,
                }
                if message.delay_seconds:
                    entry["DelaySeconds"] = _delay(message.delay_seconds)
                attributes = _attributes(message.attributes)
                if attributes:
                    entry["MessageAttributes"] = attributes
                entries.append(entry)
            response = self._sqs.send_message_batch(QueueUrl=queue_url, Entries=entries)
            for failed in response.get("Failed", []):
                message = chunk[int(failed["Id"])]
                failures.append(SendFailure(message.envelope, failed.get("Code", ""), failed.get("Message", "")))
        return failures
