"""The consumer's SQS calls beyond what the event source mapping does (receive and delete).

Per batch at most: one SendMessageBatch per ten deferrals, one ChangeMessageVisibilityBatch per
ten retries, and a SendMessage per dead letter (rare, and each carries its own attributes).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pipeline.adapters.queues import Outgoing, QueueSender
from pipeline.domain.envelope import Envelope
from pipeline.domain.work import FollowUp

BATCH_LIMIT = 10


class FollowUpNotSent(RuntimeError):
    """SQS refused a follow-up; the record is retried (nothing was committed yet)."""


class SqsLaneQueue:
    def __init__(self, sqs: Any, queue_url: str, dlq_url: str) -> None:
        self._sqs = sqs
        self._queue_url = queue_url
        self._dlq_url = dlq_url
        self._sender = QueueSender(sqs)

    def send(self, follow_ups: Sequence[FollowUp]) -> None:
        outgoing = [Outgoing(f.envelope, delay_seconds=f.delay_seconds) for f in follow_ups]
        refused = self._sender.send_batch(self._queue_url, outgoing)
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
