"""Reading SQS queues for an operator: the oldest message's age, and a peek. A queue's depth and
redrive policy are read through the lambdas' own adapter (pipeline/adapters/lane_queue.py).

SQS has no read that leaves a message untouched: every receive hides it for the visibility
timeout and raises its ApproximateReceiveCount. So a peek receives with a short hold, pages
through by keeping what it saw hidden, and then makes everything visible again at once. On a
dead-letter queue the raised receive count is harmless: a DLQ has no redrive policy of its own, so
nothing acts on that count, and the attempts shown come from the consumer's attributes (or the
lane's max receives), never from it.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from pipeline.domain.envelope import Envelope, MalformedEnvelope

PEEK_HOLD_SECONDS = 30
"""Long enough to page through a peek; short enough that a peek interrupted before it could
release anything only delays the messages by this much."""
RECEIVE_WAIT_SECONDS = 1
"""A long poll asks every SQS server, so an empty answer means empty (a short poll samples)."""
BATCH = 10
MAX_RECEIVES_REASON = "max receives exceeded"


def oldest_age_from_metrics(cloudwatch: Any, queue_name: str, now: float) -> float | None:
    """ApproximateAgeOfOldestMessage as SQS reports it to CloudWatch (once a minute), or None when
    there is no recent datapoint (an emulator without SQS metrics, a queue idle for hours)."""
    end = datetime.fromtimestamp(now, UTC)
    response = cloudwatch.get_metric_data(
        MetricDataQueries=[
            {
                "Id": "age",
                "MetricStat": {
                    "Metric": {
                        "Namespace": "AWS/SQS",
                        "MetricName": "ApproximateAgeOfOldestMessage",
                        "Dimensions": [{"Name": "QueueName", "Value": queue_name}],
                    },
                    "Period": 60,
                    "Stat": "Maximum",
                },
            }
        ],
        StartTime=end - timedelta(minutes=10),
        EndTime=end,
        ScanBy="TimestampDescending",
    )
    for result in response.get("MetricDataResults", []):
        values = result.get("Values") or []
        if values:
            return float(values[0])
    return None


@dataclass(frozen=True)
class Message:
    message_id: str
    receipt_handle: str
    body: str
    sent_at: float | None
    receive_count: int
    group_id: str | None
    attributes: Mapping[str, str]
    """String message attributes (what the consumer attaches when it dead-letters)."""
    wire_attributes: Mapping[str, Any]
    """All message attributes in the shape SendMessage takes, for an unchanged re-send."""
    envelope: Envelope | None

    @classmethod
    def from_sqs(cls, raw: Mapping[str, Any]) -> Message:
        system = raw.get("Attributes", {})
        sent = system.get("SentTimestamp")
        wire: dict[str, Any] = {}
        strings: dict[str, str] = {}
        for name, value in (raw.get("MessageAttributes") or {}).items():
            kept = {k: v for k, v in value.items() if k in ("DataType", "StringValue", "BinaryValue")}
            wire[name] = kept
            if "StringValue" in kept:
                strings[name] = str(kept["StringValue"])
        try:
            envelope: Envelope | None = Envelope.from_json(raw.get("Body", ""))
        except MalformedEnvelope:
            envelope = None
        return cls(
            message_id=raw["MessageId"],
            receipt_handle=raw["ReceiptHandle"],
            body=raw.get("Body", ""),
            sent_at=None if sent is None else int(sent) / 1000,
            receive_count=int(system.get("ApproximateReceiveCount", 0)),
            group_id=system.get("MessageGroupId"),
            attributes=strings,
            wire_attributes=wire,
            envelope=envelope,
        )

    @property
    def tenant(self) -> str:
        return self.attributes.get("tenant") or (self.envelope.tenant if self.envelope else "") or self.group_id or ""

    @property
    def work_id(self) -> str:
        return self.attributes.get("id") or (self.envelope.id if self.envelope else "")

    @property
    def kind(self) -> str:
        return self.attributes.get("kind") or (self.envelope.kind if self.envelope else "")

    @property
    def parked_by_consumer(self) -> bool:
        """The consumer dead-letters permanent failures itself, with the reason attached; a
        message SQS moved after too many receives carries nothing."""
        return "reason" in self.attributes

    @property
    def reason(self) -> str:
        return self.attributes.get("reason") or MAX_RECEIVES_REASON

    def attempts(self, lane_max_receives: int | None) -> str:
        if "attempts" in self.attributes:
            return self.attributes["attempts"]
        return str(lane_max_receives) if lane_max_receives is not None else "?"


def receive(
    sqs: Any, url: str, count: int, hold_seconds: int, wait_seconds: int = RECEIVE_WAIT_SECONDS
) -> list[Message]:
    response = sqs.receive_message(
        QueueUrl=url,
        MaxNumberOfMessages=max(1, min(BATCH, count)),
        VisibilityTimeout=hold_seconds,
        WaitTimeSeconds=wait_seconds,
        MessageSystemAttributeNames=["All"],
        MessageAttributeNames=["All"],
    )
    return [Message.from_sqs(raw) for raw in response.get("Messages", [])]


def release(sqs: Any, url: str, handles: Sequence[str]) -> int:
    """Make received messages visible again; returns how many SQS refused (deleted meanwhile, or
    the hold expired), which are visible again anyway or gone."""
    refused = 0
    for start in range(0, len(handles), BATCH):
        chunk = handles[start : start + BATCH]
        try:
            response = sqs.change_message_visibility_batch(
                QueueUrl=url,
                Entries=[{"Id": str(i), "ReceiptHandle": h, "VisibilityTimeout": 0} for i, h in enumerate(chunk)],
            )
        except (BotoCoreError, ClientError):
            refused += len(chunk)
            continue
        refused += len(response.get("Failed", []))
    return refused


def peek(
    sqs: Any,
    url: str,
    limit: int,
    *,
    hold_seconds: int = PEEK_HOLD_SECONDS,
    wait_seconds: int = RECEIVE_WAIT_SECONDS,
    keep: Callable[[Message], bool] = lambda _m: True,
    clock: Callable[[], float] = time.monotonic,
) -> list[Message]:
    """Up to `limit` distinct messages for which `keep` is true, oldest first, all made visible
    again before returning (also when interrupted)."""
    seen: dict[str, Message] = {}
    kept: list[Message] = []
    handles: list[str] = []
    started = clock()
    try:
        # Stop paging before the first page's hold runs out, or those messages would come round
        # again and be taken for the end of the queue.
        while len(kept) < limit and clock() - started < hold_seconds * 0.8:
            batch = receive(sqs, url, limit - len(kept), hold_seconds, wait_seconds)
            if not batch:
                break
            handles.extend(m.receipt_handle for m in batch)
            fresh = [m for m in batch if m.message_id not in seen]
            if not fresh:
                break  # came round to messages already seen: the whole queue has been looked at
            for message in fresh:
                seen[message.message_id] = message
                if keep(message):
                    kept.append(message)
    finally:
        release(sqs, url, handles)
    kept.sort(key=lambda m: (m.sent_at is None, m.sent_at or 0.0))
    return kept[:limit]
