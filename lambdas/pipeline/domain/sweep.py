"""The sweeper's rules: which logged-but-unfinished rows to replay, leave alone, or give up on.

A row is the obligation and the queue only the fast path to it, so a row still pending well after
it was written may have lost its message. Or it may simply be queued behind a backlog: replaying
that kind adds work exactly when the consumer is behind, and under load it feeds itself, because
every copy lengthens the queue all the other rows are waiting in. So a row is called lost only when
its lane says so:

- A webhook row the door could not send (it enters the index only then): nothing of it is
  queued, so it is lost as soon as the grace period has passed, however busy its lane.
- The lane holds nothing (visible, in flight or delayed): nothing the row waits for is queued, so
  it is lost as soon as the grace period has passed.
- The lane's depth cannot be read: unknown counts as busy. A sweep that cannot see a lane does not
  replay into it; during an SQS incident that would pile copies onto the queue.
- The lane is busy: the row is late, not lost, while it is within patience (the configured window
  or the lane's own objective, whichever is longer). Past that it stays late for as long as it may
  still be queued, and is lost once the lane has drained past it, or once the hard cap passes.

Patience must scale with the backlog (a message behind N others at drain rate r waits about N/r),
and a fixed window cannot: the local environment's 30 seconds replayed rows queued behind a
thousand messages, each replay lengthening that queue, and abandoned some after three copies.

"Drained past" is counted rather than read as an age: SQS reports its oldest message's age only as
a CloudWatch metric, a minute or more late (admission avoids it for the same reason). Every sweep
that reads a lane's depth keeps that sighting in the state table, beside the drain counts the
lane's consumers keep for admission. Whatever was ahead of a row's message at a sighting was counted
in it, so once the consumers have finished that many messages since, plus as many as are in flight
now (the row's own message may be one still being worked on), that message would have been taken,
and a row still pending has lost it. Only sightings a grace period or more after the row's latest
send count: the approximate depth may not include a message sent a moment before. Standard queues
are only roughly first in, first out, and a deferral re-sends its message to the back, so the count
can come early; that costs a duplicate, which the consumer's idempotency absorbs. The hard cap
bounds the other way: a lane that stalls, or that cannot be read, never drains past anything.
Sightings are per lane, not per row, so a thousand late rows cost one write a sweep, not a thousand.

Patience runs from the row's latest send, not its first: a replay waits behind the same backlog as
the original did, so it gets the same patience, not just the grace period (with only the grace
period, a busy lane's replayed row was replayed again each grace period until it was abandoned).

A row that has been replayed `max_replays` times and is still pending most likely kills whatever
processes it, so it is marked abandoned, loudly, instead of being fed to the consumer forever.

A row past its `expires_at` is left alone: its retention has run out and DynamoDB's TTL is about to
delete it (TTL deletes some time after the expiry, not at it). Replaying it would have its task
store, for another full effect retention, personal data that was due to go. Nothing the sweeper
writes can bring a deleted row back: every write is an update conditional on the row being pending.

No boto3 here: the handler plugs in the table, queue and clock adapters.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Protocol

from pipeline.domain.envelope import Envelope
from pipeline.policy.sweeper import SweeperSettings

SWEPT_SOURCES = ("webhook", "job")


class Verdict(StrEnum):
    SETTLING = "settling"
    """Replayed less than a grace period ago: that replay has not had its chance yet."""
    LATE = "late"
    """Its lane is busy (or unreadable) and has not shown it lost: most likely queued."""
    REPLAY = "replay"
    ABANDON = "abandon"


@dataclass(frozen=True)
class LaneView:
    """A lane as one sweep sees it."""

    depth: int | None
    """Visible, in flight and delayed; None when it could not be read."""
    in_flight: int = 0

    @property
    def empty(self) -> bool:
        return self.depth == 0


@dataclass(frozen=True)
class DepthSeen:
    """A sweep's reading of a lane's depth."""

    depth: int
    at: float


@dataclass(frozen=True)
class LaneHistory:
    """A stretch of a lane's recent past: what its consumers finished, by drain bucket start (see
    domain/admission.py), and the depths sweeps saw."""

    finished: Mapping[int, int]
    seen: Sequence[DepthSeen]

    def finished_after(self, at: float) -> int:
        # Whole buckets starting at or after `at` only: one straddling it may hold work finished
        # before, and counting that would call a row drained past too early.
        return sum(count for start, count in self.finished.items() if start >= at)


DEPTH_PREFIX = "sweep-depth#"
"""State-table items of depth sightings, one per lane per drain bucket, e.g.
`sweep-depth#messages#1767225600` (a later sweep in the same bucket overwrites an earlier one)."""


def depth_key(lane: str, bucket_start: int) -> str:
    return f"{DEPTH_PREFIX}{lane}#{bucket_start}"


@dataclass(frozen=True)
class Patience:
    """How long a busy lane's row is left alone: `within` unconditionally, then while the lane
    has not drained past it, up to `cap`. Both run from the row's latest send."""

    within: float
    cap: float


@dataclass(frozen=True)
class PendingRow:
    """What the sweeper knows about one pending row, read consistently just before it decides."""

    source: str
    id: str
    lane: str
    tenant: str
    pending_since: float
    replays: int
    replays_recorded: bool
    """Whether the row has a `replays` attribute at all (the conditional update must say which)."""
    replayed_at: float | None = None
    send_failed: bool = False
    """The door put it here because its send failed (webhook rows only)."""
    envelope: Envelope | None = None
    problem: str | None = None
    """Why no envelope could be built from the row; such a row can only be abandoned."""
    expires_at: float | None = None
    """When the row's retention runs out (schema.TTL); None for a row written without one."""

    def expired(self, now: float) -> bool:
        return self.expires_at is not None and self.expires_at <= now

    @property
    def never_sent(self) -> bool:
        """The door's send failed and the sweeper has not replayed it: no copy is queued anywhere."""
        return self.send_failed and self.replays == 0 and self.replayed_at is None

    @property
    def last_sent(self) -> float:
        """When its latest message (the original or a replay) went on the lane."""
        return self.pending_since if self.replayed_at is None else max(self.pending_since, self.replayed_at)


@dataclass(frozen=True)
class Overdue:
    """One source's pending rows older than the grace period, oldest first, and the age marker of
    its oldest pending row of any age (None when nothing at all is pending)."""

    ids: Sequence[str]
    oldest_pending_since: float | None


class ReplayFailed(RuntimeError):
    """The lane queue refused the replayed message; the row stays pending for the next sweep."""


class RowStore(Protocol):
    source: str

    def overdue(self, cutoff: float, limit: int) -> Overdue: ...

    def load(self, ids: Sequence[str]) -> list[PendingRow]: ...

    def claim_replay(self, row: PendingRow, now: float) -> bool: ...

    def return_replay(self, row: PendingRow) -> None: ...

    def abandon(self, row: PendingRow, now: float, reason: str) -> bool: ...


class Backlog(Protocol):
    def view(self, lane: str) -> LaneView:
        """The lane's depth now; a depth that was read is also kept as a sighting."""
        ...

    def history(self, lane: str, since: float) -> LaneHistory | None:
        """The lane's history from `since` to now (never more finished than there was), or None
        when it cannot be read."""
        ...


class Log(Protocol):
    def info(self, msg: str, *args: Any, **kwargs: Any) -> Any: ...

    def warning(self, msg: str, *args: Any, **kwargs: Any) -> Any: ...

    def error(self, msg: str, *args: Any, **kwargs: Any) -> Any: ...

    def critical(self, msg: str, *args: Any, **kwargs: Any) -> Any: ...


def patience_for(settings: SweeperSettings, objective_seconds: float) -> Patience:
    """A busy lane's row is not called lost while it is within the patience window, nor while it
    is within its own lane's objective: a bulk lane promises 30 minutes, and replaying its
    20-minute-old rows would only lengthen the backlog it is patiently working through. The cap
    never cuts that short."""
    within = max(settings.patience_seconds, objective_seconds)
    return Patience(within=within, cap=max(settings.patience_cap_seconds, within))


def drained_past(row: PendingRow, lane: LaneView, history: LaneHistory | None, grace_seconds: float) -> bool:
    """Whether, since some sighting of the lane taken a grace period or more after the row's latest
    send, the lane has finished everything it held then, plus as many as it is working on now
    (see the module docstring)."""
    if lane.depth is None or history is None:
        return False
    return any(
        seen.at >= row.last_sent + grace_seconds and history.finished_after(seen.at) >= seen.depth + lane.in_flight
        for seen in history.seen
    )


def judge(
    row: PendingRow,
    *,
    now: float,
    lane: LaneView,
    patience: Patience,
    history: Callable[[float], LaneHistory | None],
    settings: SweeperSettings,
) -> Verdict:
    """`history(since)` is asked only about a busy lane's row past its patience and short of the cap."""
    if row.replayed_at is not None and now - row.replayed_at < settings.grace_seconds:
        return Verdict.SETTLING
    if (
        not lane.empty
        and not row.never_sent
        and _may_still_be_queued(row, now, lane, patience, history, settings.grace_seconds)
    ):
        return Verdict.LATE
    if row.replays >= settings.max_replays:
        return Verdict.ABANDON
    return Verdict.REPLAY


def _may_still_be_queued(
    row: PendingRow,
    now: float,
    lane: LaneView,
    patience: Patience,
    history: Callable[[float], LaneHistory | None],
    grace_seconds: float,
) -> bool:
    waited = now - row.last_sent
    if waited < patience.within:
        return True
    if waited >= patience.cap:
        return False
    since = row.last_sent + grace_seconds
    return not drained_past(row, lane, history(since), grace_seconds)


@dataclass
class SourceReport:
    oldest_age_seconds: float = 0.0
    overdue: int = 0
    replayed: int = 0
    abandoned: int = 0
    late: int = 0
    settling: int = 0
    contended: int = 0
    """Another sweep, or the consumer finishing the row, got there between our read and write."""
    replay_failed: int = 0
    expired: int = 0
    """Past its retention: left for DynamoDB's TTL, never replayed."""


@dataclass
class SweepReport:
    sources: dict[str, SourceReport] = field(default_factory=dict)
    stopped_early: bool = False

    def as_dict(self) -> dict[str, Any]:
        return {
            "stopped_early": self.stopped_early,
            **{source: vars(report) for source, report in self.sources.items()},
        }


@dataclass(frozen=True)
class Sweep:
    """One sweep over every source. `patience_by_lane` holds each lane that has a queue to replay
    to; a row naming any other lane cannot be replayed anywhere and is abandoned."""

    settings: SweeperSettings
    stores: Sequence[RowStore]
    backlog: Backlog
    replay: Callable[[str, Envelope], None]
    patience_by_lane: Mapping[str, Patience]
    log: Log
    should_stop: Callable[[], bool] = lambda: False

    def run(self, now: float, report: SweepReport | None = None) -> SweepReport:
        """Sweep every source once. Pass `report` to keep what was done so far if a step raises."""
        report = SweepReport() if report is None else report
        # Ages first for every source, so the watchdog metric is complete even when a later step
        # fails or the run stops early.
        found: list[tuple[RowStore, Overdue]] = []
        for store in self.stores:
            overdue = store.overdue(now - self.settings.grace_seconds, self.settings.rows_per_run)
            source_report = report.sources.setdefault(store.source, SourceReport())
            source_report.overdue = len(overdue.ids)
            if overdue.oldest_pending_since is not None:
                source_report.oldest_age_seconds = max(0.0, now - overdue.oldest_pending_since)
            found.append((store, overdue))
        for store, overdue in found:
            if not overdue.ids:
                continue
            for row in store.load(overdue.ids):
                # A run that stops early loses nothing: the next one starts again from the oldest.
                if self.should_stop():
                    report.stopped_early = True
                    return report
                self._one(store, row, now, report.sources[store.source])
        return report

    def _one(self, store: RowStore, row: PendingRow, now: float, report: SourceReport) -> None:
        if row.expired(now):
            report.expired += 1
            self.log.warning("a pending row's retention ran out; left for its TTL", extra=_fields(row))
            return
        if row.envelope is None:
            self._abandon(store, row, now, report, row.problem or "the row cannot be turned into a message")
            return
        patience = self.patience_by_lane.get(row.lane)
        if patience is None:
            self._abandon(store, row, now, report, f"lane {row.lane!r} has no queue to replay to")
            return
        lane = self.backlog.view(row.lane)
        verdict = judge(
            row,
            now=now,
            lane=lane,
            patience=patience,
            history=lambda since: self.backlog.history(row.lane, since),
            settings=self.settings,
        )
        if verdict is Verdict.SETTLING:
            report.settling += 1
        elif verdict is Verdict.LATE:
            report.late += 1
        elif verdict is Verdict.ABANDON:
            self._abandon(store, row, now, report, f"abandoned after {row.replays} replays without finishing")
        else:
            self._replay(store, row, now, report)

    def _replay(self, store: RowStore, row: PendingRow, now: float, report: SourceReport) -> None:
        assert row.envelope is not None
        # Claim first, send second: of two sweeps that read the same count only one wins the
        # conditional write, so only one sends. A send that fails gives the claim back, so an SQS
        # outage does not use up a row's replays and get it abandoned without ever being replayed.
        if not store.claim_replay(row, now):
            report.contended += 1
            return
        try:
            self.replay(row.lane, row.envelope)
        except ReplayFailed as exc:
            store.return_replay(row)
            report.replay_failed += 1
            self.log.error("replay failed; the row stays pending", extra={**_fields(row), "error": str(exc)})
            return
        report.replayed += 1
        fields = {**_fields(row), "replay": row.replays + 1, "age_seconds": now - row.pending_since}
        self.log.warning("replayed a pending row", extra=fields)

    def _abandon(self, store: RowStore, row: PendingRow, now: float, report: SourceReport, reason: str) -> None:
        if not store.abandon(row, now, reason):
            report.contended += 1
            return
        report.abandoned += 1
        # CRITICAL on purpose: something in this row keeps killing its consumer (or it cannot be
        # routed at all), and replaying it again would only repeat that.
        self.log.critical("abandoned a pending row", extra={**_fields(row), "reason": reason})


def _fields(row: PendingRow) -> dict[str, Any]:
    return {"source": row.source, "id": row.id, "lane": row.lane, "tenant": row.tenant, "replays": row.replays}
