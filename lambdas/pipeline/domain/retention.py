"""When an item is deleted: every item carries `expires_at` (epoch seconds, schema.TTL), and
DynamoDB's TTL removes it some time after (usually within a few days; reads may still see it
until then). Each writer sets it from `expiry`: the webhook door on its row, the jobs API on its
job, the erasure on its request and tombstones, the consumer on every write of a task
(domain/consumer/expiries.py).
"""

from __future__ import annotations

import math


def expiry(now: float, keep_seconds: float, *, not_before: float | None = None) -> int:
    """The `expires_at` of an item written at `now` and kept `keep_seconds`, counted from
    `not_before` when that is later (a job is kept past its deadline, never deleted before it)."""
    start = now if not_before is None else max(now, not_before)
    return math.ceil(start + keep_seconds)
