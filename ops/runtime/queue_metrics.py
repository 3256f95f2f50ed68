"""The AWS/SQS metrics CloudWatch publishes for every queue, computed from moto's queues.

moto publishes no SQS metrics, and no SQS API reports the oldest message's age without receiving
(which would change receive counts), so this reads the emulator's queue state directly, the way
CloudWatch reads SQS's: it never receives, deletes or changes a message.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from ops.runtime.deploy import ACCOUNT, REGION
from ops.runtime.metrics import MetricsStore
from ops.runtime.moto_sqs import counts_of

NAMESPACE = "AWS/SQS"


@dataclass(frozen=True)
class QueueSample:
    name: str
    visible: int
    in_flight: int
    delayed: int
    oldest_age_seconds: float


def sample(queue_name: str) -> QueueSample:
    from moto.sqs.models import sqs_backends

    counts = counts_of(sqs_backends[ACCOUNT][REGION].queues[queue_name])
    oldest = counts.oldest_sent_ms
    age = 0.0 if oldest is None else max(0.0, (time.time() * 1000 - oldest) / 1000)
    return QueueSample(queue_name, counts.visible, counts.in_flight, counts.delayed, age)


def record(store: MetricsStore, queue_names: list[str]) -> dict[str, QueueSample]:
    samples = {}
    now = time.time()
    for name in queue_names:
        s = sample(name)
        samples[name] = s
        dimensions = {"QueueName": name}
        store.put(NAMESPACE, "ApproximateNumberOfMessagesVisible", dimensions, s.visible, "Count", now)
        store.put(NAMESPACE, "ApproximateNumberOfMessagesNotVisible", dimensions, s.in_flight, "Count", now)
        store.put(NAMESPACE, "ApproximateNumberOfMessagesDelayed", dimensions, s.delayed, "Count", now)
        store.put(NAMESPACE, "ApproximateAgeOfOldestMessage", dimensions, s.oldest_age_seconds, "Seconds", now)
    return samples
