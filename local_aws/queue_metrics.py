"""The AWS/SQS metrics CloudWatch publishes for every queue, computed from moto's queues.

moto publishes no SQS metrics, and no SQS API reports the oldest message's age without receiving
(which would change receive counts), so this reads the emulator's queue state directly, the way
CloudWatch reads SQS's: it never receives, deletes or changes a message. A standard queue also
gets the fair-queue metrics SQS publishes (its lanes' messages carry the tenant as MessageGroupId).
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from local_aws.deploy import ACCOUNT, REGION
from local_aws.fairness import NoisyGroup
from local_aws.metrics import MetricsStore
from local_aws.moto_sqs import counts_of, fair_counts_of

NAMESPACE = "AWS/SQS"


@dataclass(frozen=True)
class QueueSample:
    name: str
    visible: int
    in_flight: int
    delayed: int
    oldest_age_seconds: float
    fair: bool = False
    """A standard queue: SQS publishes the fair-queue figures below for it (FIFO queues have none)."""
    noisy_groups: int = 0
    visible_in_quiet: int = 0
    in_flight_in_quiet: int = 0
    delayed_in_quiet: int = 0
    oldest_quiet_age_seconds: float = 0.0
    noisy: tuple[NoisyGroup, ...] = ()
    """The noisiest groups (most messages first), for the live view; never published."""


def _age(sent_ms: int | None, now_ms: float) -> float:
    return 0.0 if sent_ms is None else max(0.0, (now_ms - sent_ms) / 1000)


def sample(queue_name: str) -> QueueSample:
    from moto.sqs.models import sqs_backends

    queue = sqs_backends[ACCOUNT][REGION].queues[queue_name]
    counts = counts_of(queue)
    fair = fair_counts_of(queue)
    now_ms = time.time() * 1000
    base = QueueSample(
        queue_name, counts.visible, counts.in_flight, counts.delayed, _age(counts.oldest_sent_ms, now_ms)
    )
    if fair is None:
        return base
    return QueueSample(
        queue_name,
        counts.visible,
        counts.in_flight,
        counts.delayed,
        base.oldest_age_seconds,
        fair=True,
        noisy_groups=fair.noisy_groups,
        visible_in_quiet=fair.visible_in_quiet,
        in_flight_in_quiet=fair.in_flight_in_quiet,
        delayed_in_quiet=fair.delayed_in_quiet,
        oldest_quiet_age_seconds=_age(fair.oldest_quiet_sent_ms, now_ms),
        noisy=fair.noisy,
    )


def record(store: MetricsStore, queue_names: list[str]) -> dict[str, QueueSample]:
    samples = {}
    now = time.time()
    for name in queue_names:
        s = sample(name)
        samples[name] = s
        dimensions = {"QueueName": name}
        figures = [
            ("ApproximateNumberOfMessagesVisible", s.visible, "Count"),
            ("ApproximateNumberOfMessagesNotVisible", s.in_flight, "Count"),
            ("ApproximateNumberOfMessagesDelayed", s.delayed, "Count"),
            ("ApproximateAgeOfOldestMessage", s.oldest_age_seconds, "Seconds"),
        ]
        if s.fair:
            figures += [
                ("ApproximateNumberOfNoisyGroups", s.noisy_groups, "Count"),
                ("ApproximateNumberOfMessagesVisibleInQuietGroups", s.visible_in_quiet, "Count"),
                ("ApproximateNumberOfMessagesNotVisibleInQuietGroups", s.in_flight_in_quiet, "Count"),
                ("ApproximateNumberOfMessagesDelayedInQuietGroups", s.delayed_in_quiet, "Count"),
                ("ApproximateAgeOfOldestMessageInQuietGroups", s.oldest_quiet_age_seconds, "Seconds"),
            ]
        for metric, value, unit in figures:
            store.put(NAMESPACE, metric, dimensions, value, unit, now)
    return samples
