"""How a record's outcome is carried out when it takes more than an ack: a deferral, an expiry,
a retry, a dead letter and the marks on its row they carry; then, once per batch, the re-sends
and visibility changes the batch's outcomes ask SQS for.

Steps 6 and the end of the batch in domain/consumer/batch.py's overview.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any

from pipeline import schema
from pipeline.domain.consumer import marks, retry
from pipeline.domain.consumer import outcomes as out
from pipeline.domain.consumer.config import Adapters, ConsumerConfig
from pipeline.domain.consumer.marks import Obligation
from pipeline.domain.consumer.outcomes import RecordOutcome
from pipeline.domain.consumer.records import Received
from pipeline.domain.effects import OnConflict, Table, Update
from pipeline.domain.envelope import Envelope
from pipeline.domain.errors import AWS_THROTTLED, Classified, PermanentError, classify
from pipeline.domain.jobs.bookkeeping import job_finished
from pipeline.domain.ports import CommitState
from pipeline.domain.webhook.body import part_id
from pipeline.metric_names import Outcome
from pipeline.schema.webhook_log import BODY_PARTS
from pipeline.settings.lane_policy import DLQ_RETENTION_SECONDS

ERROR_ATTRIBUTE_LIMIT = 256
AWS_SIDE = frozenset({AWS_THROTTLED, "aws_deployment", "sdk_network"})
"""Classified reasons (domain/errors.py) that are AWS's (or the network's, or the deployment's)
state, not the record's: every record fails alike until it passes, and spending attempts on it
would dead-letter a lane's whole traffic within its retries' span (about 30 s for messages)."""
AWS_UNAVAILABLE = "aws_unavailable"
"""A deferral's reason while AWS is throttling or unavailable."""
LANE_PAUSED = "lane_paused"
"""A deferral's reason when the record failed in a way that stops its lane (Classified.stops_lane):
the lane's mapping is being disabled, and the record waits in the lane for its resumption."""
PAUSED_HOLD_SECONDS = 60
"""How long a held record stays out of sight: the copies a lane still receives before its mapping
stops are not received again and again meanwhile, and are due again within a minute of a resume."""
AWS_OUTAGE_DEFERRALS = 20
"""The bound: a record deferred this often (for any reason but a continuation of a task with more
to do, which is progress) spends attempts again. Its backoffs
grow to the lane's retry cap (five minutes in production), so this waits out about half an hour
of AWS trouble before the usual retries, and the DLQ, take over."""


def attempt_of(received: Received) -> int:
    carried = received.envelope.attempt if received.envelope else 0
    return retry.attempt_number(carried, received.receive_count)


def malformed(received: Received) -> Classified:
    error = classify(PermanentError("malformed", received.problem or "not an envelope"))
    return replace(error, error_class="MalformedEnvelope")


class Settler:
    def __init__(
        self, config: ConsumerConfig, adapters: Adapters, *, clock: Callable[[], float], rng: random.Random
    ) -> None:
        self._config = config
        self._lane = config.lane
        self._io = adapters
        self._clock = clock
        self._rng = rng

    # Outcomes with side effects

    def defer(self, received: Received, budget: str, progress: Mapping[str, Any] | None = None) -> RecordOutcome:
        delay = retry.deferral_delay(self._lane.defer_seconds, self._rng)
        return out.deferred(delay, attempt_of(received), budget, progress)

    def expire(
        self, received: Received, obligation: Obligation, attempt: int, now: float, *, time_left: float
    ) -> RecordOutcome:
        detail = {"time_left": round(max(0.0, time_left), 3)} if time_left > 0 else {}
        envelope = received.envelope
        assert envelope is not None
        mark = marks.finish(
            obligation,
            envelope,
            status=schema.RowStatus.EXPIRED,
            now=now,
            attempts=attempt,
            marker_ttl_seconds=self._config.marker_ttl_seconds,
        )
        if mark is None:  # internal work: nothing to mark, nobody waiting
            return out.acked(Outcome.EXPIRED, attempt, **detail)
        try:
            committed = self._io.committer.commit(
                mark, job_finished(envelope, obligation.status, schema.RowStatus.EXPIRED)
            )
        except Exception as exc:
            return self.failed(received, obligation, classify(exc))
        if committed.state is CommitState.DUPLICATE:
            return out.acked(Outcome.DUPLICATE, attempt)
        return out.acked(Outcome.EXPIRED, attempt, **detail)

    def failed(self, received: Received, obligation: Obligation | None, error: Classified) -> RecordOutcome:
        attempt = attempt_of(received)
        envelope = received.envelope
        held = self._io.failures.holds(error.reason) if self._io.failures is not None else None
        if held is not None:
            # The dependency fails most of this instance's calls: the lane is pausing for that.
            error = replace(error, reason=held, stops_lane=True)
        if error.stops_lane and envelope is not None and envelope.deferrals < AWS_OUTAGE_DEFERRALS:
            # Every record of the lane would fail alike until the account is fixed: spending their
            # attempts would only move the lane's whole traffic to its DLQ.
            hold = min(PAUSED_HOLD_SECONDS, math.ceil(self._lane.retry.cap_seconds))
            outcome = out.deferred(hold, attempt, LANE_PAUSED)
            return replace(outcome, error=error)
        if error.reason in AWS_SIDE and envelope is not None and envelope.deferrals < AWS_OUTAGE_DEFERRALS:
            return self._wait_out(received, error, attempt)
        if error.transient and attempt < self._lane.max_receives:
            return self._retry(received, obligation, error, attempt)
        if error.transient:
            # Counted across re-sends, which SQS's receive count is not; dead-lettering here also
            # attaches the reason and marks the row, which a silent redrive would do neither of.
            error = replace(error, reason="retries_exhausted")
        return self.dead_letter(received, obligation, error, attempt)

    def _wait_out(self, received: Received, error: Classified, attempt: int) -> RecordOutcome:
        """AWS itself throttling or unavailable: re-sent after a backoff that grows with each
        deferral, acked, and no attempt spent, so a blip longer than the lane's retries span does
        not fill the DLQ with work that is fine."""
        assert received.envelope is not None
        backoff = retry.backoff(
            received.envelope.deferrals + 1, self._lane.retry.base_seconds, self._lane.retry.cap_seconds, self._rng
        )
        outcome = out.deferred(max(1, backoff.seconds), attempt, AWS_UNAVAILABLE)
        return replace(outcome, error=error)

    def _retry(
        self, received: Received, obligation: Obligation | None, error: Classified, attempt: int
    ) -> RecordOutcome:
        policy = self._lane.retry
        if error.pace is not None:  # the dependency said how soon: Meta's rate limits
            backoff = retry.paced_backoff(attempt, error.pace, policy.cap_seconds, self._rng)
        else:
            backoff = retry.backoff(attempt, policy.base_seconds, policy.cap_seconds, self._rng)
        if obligation is not None and received.envelope is not None and not obligation.internal and obligation.open:
            note = marks.retry_note(obligation, received.envelope, now=self._clock(), attempts=attempt, error=error)
            try:
                self._io.committer.commit(note, ())
            except Exception as exc:  # the row is a status display here; the message is the retry
                self._io.observer.problem("retry not noted on the row", exc, id=received.envelope.id)
        return out.retried(backoff.seconds, error, attempt, backoff_ceiling=round(backoff.ceiling, 3))

    def dead_letter(
        self, received: Received, obligation: Obligation | None, error: Classified, attempt: int
    ) -> RecordOutcome:
        envelope = received.envelope
        attributes = {
            "reason": error.reason,
            "error_class": error.error_class,
            "error": error.message[:ERROR_ATTRIBUTE_LIMIT],
            "attempts": str(attempt),
            "lane": self._lane.name,
            "tenant": envelope.tenant if envelope else "",
            "kind": envelope.kind if envelope else "",
            "id": envelope.id if envelope else "",
            "source_message_id": received.message_id,
        }
        try:
            if envelope is not None and obligation is not None:
                self._index_before_parking(obligation)
            # The original body, unchanged: a redrive replays exactly what arrived.
            self._io.queue.dead_letter(received.body, attributes)
        except Exception as exc:
            # Unable to park it: keep it in the lane, where the receive count still bounds it.
            backoff = retry.backoff(attempt, self._lane.retry.base_seconds, self._lane.retry.cap_seconds, self._rng)
            return out.retried(backoff.seconds, classify(exc), attempt, dead_letter_failed=error.reason)
        if envelope is not None and obligation is not None and obligation.found is not None and obligation.open:
            self._mark_failed(envelope, obligation, error, attempt)
        return out.dead_lettered(error, attempt)

    def _index_before_parking(self, obligation: Obligation) -> None:
        """A plain webhook row (its send succeeded) is in no index, so if the mark that says it
        failed were lost after its message is parked, nothing would ever look at it again: it is
        put in the pending index first, where the sweeper finds it still pending. The failed mark
        takes it out again. Raises when DynamoDB did not take it (the record then stays in its
        lane). Jobs are always in the index; a missing or finished row needs nothing."""
        found = obligation.found
        if obligation.table is not Table.WEBHOOK_LOG or found is None or not obligation.open:
            return
        if schema.PENDING_SHARD in found:
            return
        self._io.committer.commit(marks.pending_again(obligation, now=self._clock()), ())

    def _mark_failed(self, envelope: Envelope, obligation: Obligation, error: Classified, attempt: int) -> None:
        now = self._clock()
        keep_until = dead_letter_keep_until(obligation, now)
        mark = marks.finish(
            obligation,
            envelope,
            status=schema.RowStatus.FAILED,
            now=now,
            attempts=attempt,
            marker_ttl_seconds=self._config.marker_ttl_seconds,
            error=error,
            keep_until=keep_until,
        )
        if mark is None:
            return
        writes = (
            *job_finished(envelope, obligation.status, schema.RowStatus.FAILED),
            *_body_parts_kept(obligation, keep_until),
        )
        try:
            self._io.committer.commit(mark, writes)
        except Exception as exc:  # it is in the DLQ already; the sweeper will see the row pending
            self._io.observer.problem("dead-lettered row not marked failed", exc, id=envelope.id)

    # SQS, once per batch

    def settle_with_sqs(self, batch: list[Received], settled: dict[int, RecordOutcome]) -> dict[int, RecordOutcome]:
        deferrals = [index for index, outcome in settled.items() if outcome.defer_seconds is not None]
        if deferrals:
            resends: list[tuple[Envelope, int]] = []
            for index in deferrals:
                received = batch[index]
                envelope = received.envelope
                assert envelope is not None
                carried = retry.carried_on_resend(envelope.attempt, received.receive_count)
                progress = settled[index].progress
                resent = envelope.deferred() if progress is None else envelope.continued(progress)
                resent = resent.with_attempts(carried)
                resends.append((resent, settled[index].defer_seconds or 0))
            try:
                refused = self._io.queue.defer(resends)
            except Exception as exc:
                self._io.observer.problem("deferrals not re-sent", exc, count=len(resends))
                refused = set(range(len(resends)))
            for position in refused:
                index = deferrals[position]
                # Not re-sent, so not acked either: the original comes back after the same delay.
                settled[index] = replace(
                    settled[index], failed=True, visibility_seconds=settled[index].defer_seconds, defer_seconds=None
                )
        changes = [
            (batch[index].receipt_handle, outcome.visibility_seconds)
            for index, outcome in settled.items()
            if outcome.failed and outcome.visibility_seconds is not None and batch[index].receipt_handle
        ]
        if changes:
            try:
                refused_changes = self._io.queue.set_visibility(changes)
            except Exception as exc:
                self._io.observer.problem("visibility not changed; messages return after the queue's timeout", exc)
            else:
                if refused_changes:
                    self._io.observer.problem("some visibility changes were refused", None, refused=refused_changes)
        return settled


DEAD_LETTER_MARGIN_SECONDS = 24 * 3600
"""Past the DLQ's own retention: a dead letter redriven on its last day still finds its row when a
consumer takes it a little later."""


def dead_letter_keep_until(obligation: Obligation, now: float) -> int:
    """A dead-lettered row's new expiry: as long as its dead letter can wait for a redrive, never
    shorter than it was. A row that expired first would turn the redrive into `row_missing`, and
    the delivery (its body too, when it travelled by reference) would be lost."""
    kept = int(now) + DLQ_RETENTION_SECONDS + DEAD_LETTER_MARGIN_SECONDS
    current = (obligation.found or {}).get(schema.TTL)
    return kept if current is None else max(kept, int(current))


def _body_parts_kept(obligation: Obligation, keep_until: int) -> tuple[Update, ...]:
    """A split body's other parts, kept as long as their row. Updates conditional on the part
    still being there: a part TTL already deleted is not written back empty."""
    found = obligation.found or {}
    if obligation.table is not Table.WEBHOOK_LOG or int(found.get(BODY_PARTS) or 1) <= 1:
        return ()
    row_id = str(obligation.key[schema.ID])
    return tuple(
        Update(
            table=Table.WEBHOOK_LOG,
            key={schema.ID: part_id(row_id, index)},
            expression="SET #ttl = :ttl",
            condition="attribute_exists(#id)",
            names={"#ttl": schema.TTL, "#id": schema.ID},
            values={":ttl": keep_until},
            on_conflict=OnConflict.SKIP,
        )
        for index in range(1, int(found[BODY_PARTS]))
    )
