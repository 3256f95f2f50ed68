"""The sweeper's rules: which logged-but-unfinished rows to replay, leave alone, or give up on.

A row is called lost only when its lane says so (domain/sweep/verdict.py has the rule and why);
what a sweep reads, rows and lanes, is domain/sweep/inputs.py.

A row past its `expires_at` is never replayed: its retention has run out and DynamoDB's TTL is about
to delete it (TTL deletes some time after the expiry, not at it). Replaying it would have its task
store, for another full effect retention, personal data that was due to go. It is marked expired
and taken out of the pending index, counted and alarmed on: left there, expired rows would stand at
the head of the oldest-first index and every sweep would read them again before any newer lost row.
Nothing the sweeper writes can bring a deleted row back: every write is an update conditional on
the row being pending.

A sweep reads the whole index a page at a time until its time budget runs out, the sources taking
turns, and saves where it stopped so the next resumes there; lost rows are claimed a page at a time
and replayed in batches (SendMessageBatch), so its replay rate is not one row's round trips.

No boto3 here: the handler plugs in the table, queue and clock adapters.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pipeline.domain.envelope import Envelope
from pipeline.domain.sweep.inputs import PendingRow, ReplayFailed
from pipeline.domain.sweep.ports import Backlog, Log, RowStore
from pipeline.domain.sweep.verdict import Patience, Verdict, judge
from pipeline.domain.webhook.routing import WEBHOOK_LANES
from pipeline.settings.sweeper_policy import SweeperSettings

SWEPT_SOURCES = ("webhook", "job")


def source_lanes(source: str, lanes: Collection[str]) -> tuple[str, ...]:
    """The lanes a source's rows can wait on: a delivery only on a lane the door routes to, a job
    on any lane. Each has an age alarm of its own (stacks/constructs/schedules.py)."""
    return tuple(sorted(lane for lane in lanes if source != "webhook" or lane in WEBHOOK_LANES))


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
    """Past its retention before it was processed: marked expired and taken out of the pending
    index, never replayed (published as ExpiredUnprocessed, which alarms)."""
    oldest_by_lane: dict[str, float] = field(default_factory=dict)
    """Each lane's oldest row this sweep read still pending (by `pending_since`), so each lane's
    age is alarmed against its own objective: a bulk import's half-hour wait is normal, a
    message's is not. Only rows past the grace period are read, and a sweep that stops early
    has read only part of the index (`lane_ages`)."""

    def lane_ages(self, now: float, lanes: Collection[str], *, whole: bool) -> dict[str, float]:
        """The age of each lane's oldest pending row this sweep read; 0 for every other lane of
        `lanes` when the sweep read to the end (`whole`), and nothing for them when it did not."""
        ages = {lane: max(0.0, now - since) for lane, since in self.oldest_by_lane.items() if lane in lanes}
        if whole:
            ages.update({lane: 0.0 for lane in lanes if lane not in ages})
        return ages

    def saw_pending(self, row: PendingRow) -> None:
        current = self.oldest_by_lane.get(row.lane)
        if current is None or row.pending_since < current:
            self.oldest_by_lane[row.lane] = row.pending_since


@dataclass
class SweepReport:
    sources: dict[str, SourceReport] = field(default_factory=dict)
    stopped_early: bool = False

    def as_dict(self) -> dict[str, Any]:
        return {
            "stopped_early": self.stopped_early,
            **{
                source: {name: value for name, value in vars(report).items() if name != "oldest_by_lane"}
                for source, report in self.sources.items()
            },
        }


@dataclass(frozen=True)
class Sweep:
    """One sweep over every source. `patience_by_lane` holds each lane that has a queue to replay
    to; a row naming any other lane cannot be replayed anywhere and is abandoned. `replay` sends a
    lane its messages in as few calls as it can, returning the positions it refused, or raises
    ReplayFailed when the lane took none."""

    settings: SweeperSettings
    stores: Sequence[RowStore]
    backlog: Backlog
    replay: Callable[[str, Sequence[Envelope]], Collection[int]]
    patience_by_lane: Mapping[str, Patience]
    log: Log
    should_stop: Callable[[], bool] = lambda: False
    """The invocation is about to time out: stop before the next page."""
    run_over: Callable[[], bool] = lambda: False
    """The run's time budget is spent: stop after the page in hand."""

    def run(self, now: float, report: SweepReport | None = None) -> SweepReport:
        """Sweep every source once. Pass `report` to keep what was done so far if a step raises."""
        report = SweepReport() if report is None else report
        # Ages first for every source, so the watchdog metric is complete even when a later step
        # fails or the run stops early.
        for store in self.stores:
            source_report = report.sources.setdefault(store.source, SourceReport())
            oldest = store.oldest_pending_since()
            if oldest is not None:
                source_report.oldest_age_seconds = max(0.0, now - oldest)
        cutoff = now - self.settings.grace_seconds
        # The sources take turns a page at a time: a backlog of lost deliveries must not keep the
        # sweep from reaching a lost job until it is through.
        reading = [(store, iter(store.pages(cutoff, self.settings.page_rows))) for store in self.stores]
        failing: set[str] = set()
        while reading:
            for entry in list(reading):
                # A run that stops early loses nothing: the next one resumes where this one stopped.
                if self.should_stop():
                    return self._stop(reading, now, report)
                store, pages = entry
                rows = next(pages, None)
                if rows is None:
                    reading.remove(entry)
                    store.keep_position(now)
                    continue
                source_report = report.sources[store.source]
                source_report.overdue += len(rows)
                self._page(store, rows, now, source_report, failing)
                # Checked after a page, so every run moves on by at least one.
                if self.run_over():
                    return self._stop(reading, now, report)
        return report

    def _stop(self, reading: Sequence[tuple[RowStore, Any]], now: float, report: SweepReport) -> SweepReport:
        for store, _ in reading:
            store.keep_position(now)
        report.stopped_early = True
        return report

    def _page(
        self, store: RowStore, rows: Sequence[PendingRow], now: float, report: SourceReport, failing: set[str]
    ) -> None:
        lost: dict[str, list[PendingRow]] = {}
        for row in rows:
            if self._is_lost(store, row, now, report):
                lost.setdefault(row.lane, []).append(row)
        for lane, lane_rows in lost.items():
            if lane in failing:
                # Its queue refused this sweep's first replays: no claims (and no returns) for the
                # rest of an outage's backlog, which the next sweep tries again.
                report.replay_failed += len(lane_rows)
                continue
            self._replay(store, lane, lane_rows, now, report, failing)

    def _is_lost(self, store: RowStore, row: PendingRow, now: float, report: SourceReport) -> bool:
        if row.expired(now):
            self._expire(store, row, now, report)
            return False
        if row.envelope is None:
            self._abandon(store, row, now, report, row.problem or "the row cannot be turned into a message")
            return False
        patience = self.patience_by_lane.get(row.lane)
        if patience is None:
            self._abandon(store, row, now, report, f"lane {row.lane!r} has no queue to replay to")
            return False
        lane = self.backlog.view(row.lane)
        verdict = judge(
            row,
            now=now,
            lane=lane,
            patience=patience,
            history=lambda since: self.backlog.history(row.lane, since),
            settings=self.settings,
        )
        if verdict is not Verdict.ABANDON:
            report.saw_pending(row)
        if verdict is Verdict.SETTLING:
            report.settling += 1
        elif verdict is Verdict.LATE:
            report.late += 1
        elif verdict is Verdict.ABANDON:
            self._abandon(store, row, now, report, f"abandoned after {row.replays} replays without finishing")
        else:
            return True
        return False

    def _replay(
        self,
        store: RowStore,
        lane: str,
        rows: Sequence[PendingRow],
        now: float,
        report: SourceReport,
        failing: set[str],
    ) -> None:
        # Claim first, send second: of two sweeps that read the same count only one wins the
        # conditional write, so only one sends. A send that fails gives the claim back, so an SQS
        # outage does not use up a row's replays and get it abandoned without ever being replayed.
        claimed = store.claim_replays(rows, now)
        won = [row for row, ok in zip(rows, claimed, strict=True) if ok]
        report.contended += len(rows) - len(won)
        if not won:
            return
        envelopes = [row.envelope for row in won if row.envelope is not None]
        try:
            refused = set(self.replay(lane, envelopes))
        except ReplayFailed as exc:
            failing.add(lane)
            refused = set(range(len(won)))
            self.log.error(
                "replay failed; the rows stay pending",
                extra={"source": store.source, "lane": lane, "rows": len(won), "error": str(exc)},
            )
        for position, row in enumerate(won):
            if position in refused:
                store.return_replay(row)
        sent = [row for position, row in enumerate(won) if position not in refused]
        report.replay_failed += len(won) - len(sent)
        report.replayed += len(sent)
        if sent:
            # One line per lane and page, not per row: a recovery replays thousands a minute.
            self.log.warning(
                "replayed pending rows",
                extra={
                    "source": store.source,
                    "lane": lane,
                    "rows": len(sent),
                    "ids": [row.id for row in sent],
                    "oldest_age_seconds": round(now - min(row.pending_since for row in sent), 1),
                },
            )

    def _expire(self, store: RowStore, row: PendingRow, now: float, report: SourceReport) -> None:
        if not store.expire(row, now):
            report.contended += 1
            return
        report.expired += 1
        # Work accepted and never done: ERROR, and counted (ExpiredUnprocessed), which pages.
        self.log.error("a pending row's retention ran out before it was processed", extra=_fields(row))

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
