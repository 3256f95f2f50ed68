"""The sweeper's rules: which logged-but-unfinished rows to replay, leave alone, or give up on.

A row is called lost only when its lane says so (domain/sweep_verdict.py has the rule and why);
what a sweep reads, rows and lanes, is domain/sweep_inputs.py.

A row past its `expires_at` is left alone: its retention has run out and DynamoDB's TTL is about to
delete it (TTL deletes some time after the expiry, not at it). Replaying it would have its task
store, for another full effect retention, personal data that was due to go. Nothing the sweeper
writes can bring a deleted row back: every write is an update conditional on the row being pending.

No boto3 here: the handler plugs in the table, queue and clock adapters.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from pipeline.domain.envelope import Envelope
from pipeline.domain.sweep_inputs import Backlog, Overdue, PendingRow, ReplayFailed, RowStore
from pipeline.domain.sweep_verdict import Patience, Verdict, judge
from pipeline.policy.sweeper import SweeperSettings

SWEPT_SOURCES = ("webhook", "job")


class Log(Protocol):
    def info(self, msg: str, *args: Any, **kwargs: Any) -> Any: ...

    def warning(self, msg: str, *args: Any, **kwargs: Any) -> Any: ...

    def error(self, msg: str, *args: Any, **kwargs: Any) -> Any: ...

    def critical(self, msg: str, *args: Any, **kwargs: Any) -> Any: ...


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
