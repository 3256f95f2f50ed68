"""The sweeper's rules: which logged-but-unfinished rows to replay, leave alone, or give up on.

A row is the obligation and the queue only the fast path to it, so a row still pending well after
it was written may have lost its message. Or it may simply be queued behind a backlog: replaying
that kind adds work exactly when the consumer is behind. So, while the row's lane has a backlog and
the row is younger than the patience window, it is left alone (late is not lost); past that it is
replayed anyway, which bounds how long a lost row can wait. A row that has been replayed
`max_replays` times and is still pending most likely kills whatever processes it, so it is marked
abandoned, loudly, instead of being fed to the consumer forever.

No boto3 here: the handler plugs in the table, queue and clock adapters.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Protocol

from pipeline.domain.envelope import Envelope
from pipeline.settings import SweeperSettings

SWEPT_SOURCES = ("webhook", "job")


class Verdict(StrEnum):
    SETTLING = "settling"
    """Replayed less than a grace period ago: that replay has not had its chance yet."""
    LATE = "late"
    """Its lane is busy and it is within patience: most likely queued, not lost."""
    REPLAY = "replay"
    ABANDON = "abandon"


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
    envelope: Envelope | None = None
    problem: str | None = None
    """Why no envelope could be built from the row; such a row can only be abandoned."""


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
    def busy(self, lane: str) -> bool: ...


class Log(Protocol):
    def info(self, msg: str, *args: Any, **kwargs: Any) -> Any: ...

    def warning(self, msg: str, *args: Any, **kwargs: Any) -> Any: ...

    def error(self, msg: str, *args: Any, **kwargs: Any) -> Any: ...

    def critical(self, msg: str, *args: Any, **kwargs: Any) -> Any: ...


def patience_for(settings: SweeperSettings, objective_seconds: float) -> float:
    """A busy lane's row is not called lost while it is younger than the patience window, nor while
    it is still within its own lane's objective: a bulk lane promises 30 minutes, and replaying its
    20-minute-old rows would only lengthen the backlog it is patiently working through."""
    return max(settings.patience_seconds, objective_seconds)


def judge(row: PendingRow, *, now: float, busy: bool, patience_seconds: float, settings: SweeperSettings) -> Verdict:
    if row.replayed_at is not None and now - row.replayed_at < settings.grace_seconds:
        return Verdict.SETTLING
    if busy and now - row.pending_since < patience_seconds:
        return Verdict.LATE
    if row.replays >= settings.max_replays:
        return Verdict.ABANDON
    return Verdict.REPLAY


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
    patience_by_lane: Mapping[str, float]
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
        if row.envelope is None:
            self._abandon(store, row, now, report, row.problem or "the row cannot be turned into a message")
            return
        patience = self.patience_by_lane.get(row.lane)
        if patience is None:
            self._abandon(store, row, now, report, f"lane {row.lane!r} has no queue to replay to")
            return
        verdict = judge(
            row, now=now, busy=self.backlog.busy(row.lane), patience_seconds=patience, settings=self.settings
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
