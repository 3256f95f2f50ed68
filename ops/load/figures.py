"""`lanectl load`'s figures: per interval and in total, answers by status, the door's latency,
sent-to-stored time, queue depth and the runtime's memory and CPU; as a line, a document or a plot."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ops.load.traffic import Sent


def percentile(values: Sequence[float], fraction: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(fraction * len(ordered)) - 1))]


@dataclass
class Interval:
    start: float
    end: float
    sent: int = 0
    statuses: Counter[str] = field(default_factory=Counter)
    late: int = 0
    door_p50_ms: float | None = None
    door_p99_ms: float | None = None
    stored: int = 0
    stored_p50_s: float | None = None
    stored_p99_s: float | None = None
    queue_depth: dict[str, int] = field(default_factory=dict)
    rss_mb: float | None = None
    cpu_percent: float | None = None
    """The runtime's CPU over the interval, in percent of one core."""

    def as_dict(self) -> dict[str, Any]:
        # asdict would rebuild the Counter from (status, count) pairs, counting the pairs.
        return {**asdict(self), "statuses": dict(self.statuses)}


def _ms(seconds: float | None) -> float | None:
    return None if seconds is None else round(seconds * 1000, 1)


def summarise(window: Sequence[Sent], start: float, end: float) -> Interval:
    """Figures for the deliveries scheduled in [start, end)."""
    interval = Interval(start, end, sent=len(window))
    answered = [s.latency for s in window if s.status is not None]
    for s in window:
        interval.statuses["pending" if not s.answered else "failed" if s.status is None else str(s.status)] += 1
        interval.late += s.late
    interval.door_p50_ms = _ms(percentile(answered, 0.50))
    interval.door_p99_ms = _ms(percentile(answered, 0.99))
    waits = [s.stored_at - s.started for s in window if s.stored_at is not None]
    interval.stored = len(waits)
    p50, p99 = percentile(waits, 0.50), percentile(waits, 0.99)
    interval.stored_p50_s = None if p50 is None else round(p50, 3)
    interval.stored_p99_s = None if p99 is None else round(p99, 3)
    return interval


@dataclass
class Report:
    rate: float
    seconds: float
    businesses: int
    size: int
    intervals: list[Interval]
    total: Interval
    not_stored: int
    cpu_ms_per_webhook: float | None = None
    """The runtime's CPU time from the first send until every accepted message was stored (or the
    grace ran out), over the accepted webhooks: door, consumer, sweeper and emulator together."""
    shape: str = "texts"
    """Who wrote to whom, on which product (ops/load/shapes.py)."""

    def as_dict(self) -> dict[str, Any]:
        return {
            **asdict(self),
            "intervals": [i.as_dict() for i in self.intervals],
            "total": self.total.as_dict(),
        }


HEADER = (
    f"{'t (s)':>7} {'sent':>5} {'200':>5} {'429':>5} {'5xx':>5} {'fail':>5} {'late':>5} "
    f"{'door p50':>9} {'p99 ms':>7} {'stored p50':>11} {'p99 s':>6} {'queued':>7} {'rss MB':>7} {'cpu %':>6}"
)


def _fmt(value: float | None, pattern: str) -> str:
    return "-" if value is None else format(value, pattern)


def line(interval: Interval, origin: float) -> str:
    statuses = interval.statuses
    five = sum(v for k, v in statuses.items() if k.startswith("5"))
    return (
        f"{interval.end - origin:7.0f} {interval.sent:5d} {statuses.get('200', 0):5d} {statuses.get('429', 0):5d} "
        f"{five:5d} {statuses.get('failed', 0):5d} {interval.late:5d} "
        f"{_fmt(interval.door_p50_ms, '.1f'):>9} {_fmt(interval.door_p99_ms, '.1f'):>7} "
        f"{_fmt(interval.stored_p50_s, '.2f'):>11} {_fmt(interval.stored_p99_s, '.2f'):>6} "
        f"{sum(interval.queue_depth.values()) if interval.queue_depth else '-':>7} "
        f"{_fmt(interval.rss_mb, '.0f'):>7} {_fmt(interval.cpu_percent, '.0f'):>6}"
    )


def total_line(report: Report) -> str:
    total = report.total
    return (
        f"total: {total.sent} sent, answers {dict(sorted(total.statuses.items()))}, late {total.late}; "
        f"door p50 {_fmt(total.door_p50_ms, '.1f')} ms p99 {_fmt(total.door_p99_ms, '.1f')} ms; "
        f"stored {total.stored} (p50 {_fmt(total.stored_p50_s, '.2f')} s, p99 {_fmt(total.stored_p99_s, '.2f')} s), "
        f"accepted but not stored {report.not_stored}; runtime CPU per webhook "
        f"{_fmt(report.cpu_ms_per_webhook, '.1f')} ms"
    )


def plot(report: Report, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    origin = report.intervals[0].start if report.intervals else 0.0
    t = [i.end - origin for i in report.intervals]
    figure, axes = plt.subplots(4, 1, figsize=(9, 10), sharex=True)
    axes[0].plot(t, [i.statuses.get("200", 0) / (i.end - i.start) for i in report.intervals], label="200")
    axes[0].plot(t, [i.statuses.get("429", 0) / (i.end - i.start) for i in report.intervals], label="429")
    others = [
        sum(v for k, v in i.statuses.items() if k not in ("200", "429")) / (i.end - i.start) for i in report.intervals
    ]
    axes[0].plot(t, others, label="5xx / failed")
    axes[0].set_ylabel("answers / s")
    axes[0].legend(loc="upper right")
    axes[1].plot(t, [i.door_p50_ms for i in report.intervals], label="p50")
    axes[1].plot(t, [i.door_p99_ms for i in report.intervals], label="p99")
    axes[1].axhline(250, color="grey", linestyle=":", label="250 ms")
    axes[1].set_ylabel("door (ms)")
    axes[1].legend(loc="upper right")
    axes[2].plot(t, [i.stored_p50_s for i in report.intervals], label="p50")
    axes[2].plot(t, [i.stored_p99_s for i in report.intervals], label="p99")
    axes[2].set_ylabel("sent→stored (s)")
    axes[2].legend(loc="upper right")
    axes[3].plot(t, [i.rss_mb for i in report.intervals], label="runtime RSS (MB)")
    axes[3].plot(t, [sum(i.queue_depth.values()) for i in report.intervals], label="messages queued")
    axes[3].set_xlabel("seconds")
    axes[3].legend(loc="upper right")
    figure.suptitle(f"{report.rate:g} webhooks/s for {report.seconds:g} s, {report.businesses} businesses")
    figure.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=80)
    plt.close(figure)
