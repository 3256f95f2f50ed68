"""Admission control for the jobs API: will a new job on this lane start within its objective?

Predicted wait = backlog ÷ drain rate (Little's law). Over the lane's objective the job is shed
with 503 and `Retry-After` = that wait rounded up: the caller learns in milliseconds, and the work
already accepted still finishes on time.

The drain rate is measured: consumers add the number of messages they finished to a per-lane,
ten-second bucket item in the state table (`drain_key`, attribute `DRAINED`), and the jobs API
sums the last minute of buckets. A measured rate is the lane's throughput, which says how fast it
can go only while work is waiting for it. So:
- when everything waiting fits in the consumers' slots, the measurement only says how much work
  arrived, and the configured capacity (concurrency ÷ service time) is the better estimate;
- when more is waiting than the consumers can hold, what they actually finish is the truth,
  whatever the reason it is slow: a slow vendor, a dependency budget deferring work, a paused
  mapping (consumers idle with slots to spare are no evidence of capacity when they are not
  taking the work);
- the measurement starts at the first bucket with work in it, and until it covers
  `MEASUREMENT_MATURE_SECONDS` the lane has not shown its pace yet: it is given the benefit of its
  configured capacity (a burst arriving at an idle lane is not shed for the lane's idleness);
- with more waiting and nothing finished in the window, the lane is either just starting (work in
  flight: configured capacity) or stalled (nothing in flight: a drain rate of zero, and the
  longest Retry-After).
Oldest-message age is not used: SQS publishes it only as a CloudWatch metric, a minute or more
late, which is useless to a decision cached for a second.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

DRAIN_BUCKET_SECONDS = 10
DRAIN_WINDOW_BUCKETS = 6
DRAIN_PREFIX = "drain#"
DRAINED = "drained"
"""Number attribute on a drain bucket item: messages the lane's consumers finished in it."""
DRAIN_BUCKET_TTL_SECONDS = 3600
"""Buckets are read for a minute; the state table's TTL removes them after an hour."""
MEASUREMENT_MATURE_SECONDS = 2 * DRAIN_BUCKET_SECONDS
"""A measured pace over less than this is too young to shed on."""
MAX_RETRY_AFTER_SECONDS = 900
"""A stalled lane predicts an unbounded wait; callers are told to come back within 15 minutes."""


def drain_bucket_start(now: float) -> int:
    return int(now // DRAIN_BUCKET_SECONDS) * DRAIN_BUCKET_SECONDS


def drain_key(lane: str, bucket_start: int) -> str:
    """State-table `pk` of one lane's drain bucket, e.g. `drain#messages#1767225600`."""
    return f"{DRAIN_PREFIX}{lane}#{bucket_start}"


def drain_window(now: float) -> tuple[list[int], float]:
    """The bucket starts to read (the current, partial bucket and the six before it) and the
    number of seconds they cover."""
    current = drain_bucket_start(now)
    starts = [current - DRAIN_BUCKET_SECONDS * i for i in range(DRAIN_WINDOW_BUCKETS + 1)]
    return starts, now - starts[-1]


@dataclass(frozen=True)
class LaneProfile:
    """What admission needs to know about a lane from its configuration."""

    name: str
    objective_seconds: float
    slots: int
    """Messages the lane's consumers can hold at once: max concurrency * batch size."""
    capacity_per_second: float
    """Configured drain rate: max concurrency ÷ per-message service time."""


@dataclass(frozen=True)
class LaneSnapshot:
    backlog: int
    """Messages waiting: visible plus delayed (deferred work comes back to compete)."""
    in_flight: int
    """Messages received and not yet deleted: being processed, or waiting out a retry backoff."""
    drained: int | None
    """Messages finished in the window; None when no bucket exists (nothing measured)."""
    window_seconds: float


@dataclass(frozen=True)
class Decision:
    admitted: bool
    predicted_wait_seconds: float
    drain_rate: float
    retry_after_seconds: int | None = None


def drain_rate(snapshot: LaneSnapshot, profile: LaneProfile) -> float:
    measured = (
        None if snapshot.drained is None or snapshot.window_seconds <= 0 else snapshot.drained / snapshot.window_seconds
    )
    if snapshot.backlog + snapshot.in_flight <= profile.slots:
        return max(measured or 0.0, profile.capacity_per_second)
    if measured is None:
        return profile.capacity_per_second if snapshot.in_flight > 0 else 0.0
    if snapshot.window_seconds < MEASUREMENT_MATURE_SECONDS:
        return max(measured, profile.capacity_per_second)
    return measured


def decide(snapshot: LaneSnapshot | None, profile: LaneProfile) -> Decision:
    """Admit or shed one job. Without a snapshot (lane state could not be read) the job is
    admitted: the row write and the send that follow fail on their own if AWS is down, and
    refusing all work because a gauge is unreadable would be an outage of our own making."""
    if snapshot is None or snapshot.backlog <= 0:
        rate = profile.capacity_per_second if snapshot is None else drain_rate(snapshot, profile)
        return Decision(admitted=True, predicted_wait_seconds=0.0, drain_rate=rate)
    rate = drain_rate(snapshot, profile)
    wait = snapshot.backlog / rate if rate > 0 else math.inf
    if wait <= profile.objective_seconds:
        return Decision(admitted=True, predicted_wait_seconds=wait, drain_rate=rate)
    retry_after = MAX_RETRY_AFTER_SECONDS if not math.isfinite(wait) else max(1, math.ceil(wait))
    return Decision(
        admitted=False,
        predicted_wait_seconds=wait,
        drain_rate=rate,
        retry_after_seconds=min(MAX_RETRY_AFTER_SECONDS, retry_after),
    )
