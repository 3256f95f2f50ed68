"""Attempt numbers and backoff for transient failures.

A record's attempt number counts every receive that did not finish it, across re-sends: the
envelope carries the failed attempts of earlier copies (`attempt`), and SQS counts this copy's
receives. A deferral re-send keeps what earlier receives of its copy cost, and adds nothing for
the deferral itself.

A dependency that refused a call as over its rate says how soon to come back (`errors.Pace`):
its retries start from that floor instead of from zero (`paced_backoff`).

Backoff is capped exponential with full jitter (a uniform draw between zero and the capped
ceiling): when a dependency fails thousands of records in the same second, their retries spread
out instead of returning together as a second wave.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass

from pipeline.domain.errors import Pace

SQS_MAX_VISIBILITY_SECONDS = 43_200


def attempt_number(carried_attempts: int, receive_count: int) -> int:
    """1-based number of the attempt in progress."""
    return max(0, carried_attempts) + max(1, receive_count)


def carried_on_resend(carried_attempts: int, receive_count: int) -> int:
    """Failed attempts a re-sent copy should carry: earlier copies' plus this copy's receives
    before the current one (the current receive is the deferral, which is not an attempt)."""
    return max(0, carried_attempts) + max(0, receive_count - 1)


@dataclass(frozen=True)
class Backoff:
    ceiling: float
    """The capped exponential bound for this attempt."""
    seconds: int
    """The jittered delay actually applied (SQS takes whole seconds)."""


def backoff(attempt: int, base_seconds: float, cap_seconds: float, rng: random.Random) -> Backoff:
    exponent = min(max(attempt, 1) - 1, 62)  # 2**62 * base overflows nothing and is far past any cap
    ceiling = min(cap_seconds, base_seconds * (2.0**exponent))
    delay = rng.uniform(0.0, ceiling)
    return Backoff(ceiling=ceiling, seconds=min(SQS_MAX_VISIBILITY_SECONDS, math.floor(delay + 0.5)))


def paced_backoff(attempt: int, pace: Pace, cap_seconds: float, rng: random.Random) -> Backoff:
    """A retry after a dependency refused the call as over its rate: full jitter between the pace's
    floor and a ceiling that starts at its own and doubles each attempt, up to the lane's cap (or
    the pace's first ceiling, when that is higher). Whole seconds rounded up, never down: a floor
    of a second must not become a retry at once."""
    exponent = min(max(attempt, 1) - 1, 62)
    ceiling = min(max(cap_seconds, pace.ceiling_seconds), pace.ceiling_seconds * (2.0**exponent))
    delay = rng.uniform(pace.floor_seconds, ceiling)
    return Backoff(ceiling=ceiling, seconds=min(SQS_MAX_VISIBILITY_SECONDS, math.ceil(delay)))


def deferral_delay(defer_seconds: int, rng: random.Random, max_delay: int = 900) -> int:
    """A deferral's DelaySeconds: the lane's defer time plus up to half again, so a flood deferred
    in one batch does not come back as one batch."""
    base = max(0, defer_seconds)
    if base == 0:
        return 0  # no deferral delay configured: come back at once
    return min(max_delay, base + rng.randint(0, max(1, base // 2)))
