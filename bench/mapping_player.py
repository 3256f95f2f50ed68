"""Lambda's SQS event source mapping, played in process for the benchmarks: the runtime's one
emulation of it (`local_aws/event_source.py`), one batch at a time until the queue is empty; no
long polls, no concurrency, no visibility handling beyond SQS's own."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from local_aws import event_source

BATCH = event_source.MAX_MESSAGES


class FreshInvocation:
    """The Lambda context of an invocation with a whole 30 s timeout ahead of it."""

    @staticmethod
    def get_remaining_time_in_millis() -> int:
        return 30_000


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
    def invoke(event: dict[str, Any]) -> event_source.Invoked:
        return event_source.Invoked(handler(event, FreshInvocation()))

    batches = records = requests = 0
    while True:
        settled = event_source.poll_once(sqs, queue_url, source_arn, batch, invoke)
        requests += 1 + settled.delete_requests
        if not settled.messages:
            return Drained(batches, records, requests)
        batches += 1
        records += len(settled.messages)
