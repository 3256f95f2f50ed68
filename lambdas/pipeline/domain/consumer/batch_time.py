"""Whether a batch has time for its next step: the settle reserve (domain/consumer/settle_reserve.py)
priced against what the batch has settled so far and the calls this instance has seen.

The consumer takes no further step that calls SQS or DynamoDB unless the invocation would still
have this reserve left afterwards; a record it does not take is not started (re-sent untouched).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from pipeline.domain.consumer import outcomes as out
from pipeline.domain.consumer import settle_reserve as reserve_rules
from pipeline.domain.consumer.config import ConsumerConfig
from pipeline.domain.consumer.outcomes import RecordOutcome
from pipeline.domain.consumer.ports import CallTimes
from pipeline.domain.consumer.records import Received
from pipeline.domain.consumer.settling import attempt_of


class BatchTime:
    def __init__(self, config: ConsumerConfig, calls: CallTimes) -> None:
        self._config = config
        self._calls = calls
        self._slowest_before = 0.0
        """The slowest call of the previous invocation: the first calls of this one may be as slow,
        and the settle's SQS calls are often the first SQS calls of an invocation. An instance
        runs one invocation at a time, as a Lambda execution environment does."""

    def restart(self) -> None:
        """At the start of an invocation: what was the slowest call becomes the one before."""
        self._slowest_before = self._calls.restart()

    def settle_reserve(
        self, batch: list[Received], settled: dict[int, RecordOutcome], *, calls: int, leases: int
    ) -> float:
        """The time to keep for `calls` more calls and then the batch's settling, were nothing
        else taken: every record not yet settled would be re-sent."""
        again = [
            received
            for index, received in enumerate(batch)
            if index not in settled or settled[index].defer_seconds is not None
        ]
        # One more than so far: whatever is taken next may fail.
        changes = 1 + sum(1 for o in settled.values() if o.failed and o.visibility_seconds is not None)
        total = calls + reserve_rules.settle_calls(
            resends=len(again),
            visibility_changes=changes,
            releases=leases,
            resend_bytes=sum(received.body_bytes for received in again),
        )
        per_call = reserve_rules.per_call_seconds(self._slowest_before, self._calls.slowest())
        return max(self._config.reserve_seconds, reserve_rules.seconds_for(total, per_call))

    def left_after(
        self,
        remaining: Callable[[], float],
        batch: list[Received],
        settled: dict[int, RecordOutcome],
        *,
        calls: int,
        leases: int = 0,
    ) -> float:
        return remaining() - self.settle_reserve(batch, settled, calls=calls, leases=leases)

    @staticmethod
    def not_started(
        batch: list[Received],
        indices: Sequence[int],
        settled: dict[int, RecordOutcome],
        remaining: Callable[[], float],
    ) -> None:
        left = remaining()
        for index in indices:
            if index not in settled:
                settled[index] = out.not_started(attempt_of(batch[index]), left)

    @staticmethod
    def record_calls(received: Received) -> int:
        # Its payload's read when another row holds it; then two after the task: follow-ups and
        # the commit, or a retry note, or a dead letter and its row's mark.
        envelope = received.envelope
        by_reference = envelope is not None and envelope.ref is not None and envelope.ref != envelope.id
        return int(by_reference) + 2
