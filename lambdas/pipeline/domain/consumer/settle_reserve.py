"""How much of its invocation a consumer keeps back to settle its batch.

Settling is a handful of SQS and DynamoDB calls made after the last record: the re-sends of
records it deferred or did not start (SendMessageBatch, ten a call, or fewer when their bodies
fill SQS_BATCH_BYTES first), the visibility changes of
records it failed (ChangeMessageVisibilityBatch, ten a call), one lease release per tenant quota
it holds, and the drain count. If the invocation ends before they are made, every record of the
batch goes back to SQS with a receive spent, attempted or not. So the reserve is priced in calls,
at the slowest call the consumer has seen lately: with slow dependencies it stops taking records
earlier, and with fast ones the lane's own reserve (its floor) is what it keeps.
"""

from __future__ import annotations

from math import ceil

from pipeline.domain.envelope import SQS_BATCH_BYTES, SQS_BATCH_ENTRIES

CALL_FLOOR_SECONDS = 0.05
"""The least a call is priced at: above a healthy in-region SQS or DynamoDB call, so a few fast
calls seen early do not talk the reserve down to nothing."""

HEADROOM = 1.5
"""The slowest call seen is a sample, not a bound; the next ones may be slower still. Stopping a
little early costs a re-send; stopping late costs every record of the batch a receive."""


def per_call_seconds(*slowest_seen: float) -> float:
    return max(CALL_FLOOR_SECONDS, *slowest_seen)


def settle_calls(*, resends: int, visibility_changes: int, releases: int, resend_bytes: int = 0) -> int:
    """The calls the end of a batch makes: the drain count is one update, made whenever anything
    drained, so it is always priced in. Re-sends are cut at ten entries or SQS_BATCH_BYTES, and a
    cut made in order leaves each call with more than half the bytes of two, hence the 2."""
    resend_calls = max(ceil(resends / SQS_BATCH_ENTRIES), ceil(2 * resend_bytes / SQS_BATCH_BYTES))
    return resend_calls + ceil(visibility_changes / SQS_BATCH_ENTRIES) + releases + 1


def seconds_for(calls: int, per_call: float) -> float:
    return calls * per_call * HEADROOM
