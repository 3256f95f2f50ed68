"""What a sweep publishes: the oldest unprocessed age, replays, abandons and expiries per source
and lane, and the count of quiet source accounts."""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from pipeline import metric_names
from pipeline.adapters.accounts_seen import AccountsSeen
from pipeline.adapters.observability import MetricUnit
from pipeline.domain.sweep.run import SWEPT_SOURCES, SweepReport, source_lanes
from pipeline.domain.webhook.account_silence import quiet_accounts

QUIET_NAMED = 50
"""Quiet accounts named on the sweeper's line; the count has them all."""


def publish_sweep(metrics: Any, report: SweepReport, now: float, lanes: Collection[str], *, whole: bool) -> None:
    # One flush per source (and per source and lane): a metric's dimensions are per flush.
    # Zeros are published too, so "nothing pending" reads as 0 and only a silent sweeper reads
    # as missing data (which the sweeper-silent alarms page on).
    for source in SWEPT_SOURCES:
        source_report = report.sources.get(source)
        if source_report is None:
            continue
        metrics.add_dimension(metric_names.SOURCE, source)
        metrics.add_metric(metric_names.OLDEST_UNPROCESSED_AGE, MetricUnit.Seconds, source_report.oldest_age_seconds)
        metrics.add_metric(metric_names.REPLAYED, MetricUnit.Count, source_report.replayed)
        metrics.add_metric(metric_names.ABANDONED, MetricUnit.Count, source_report.abandoned)
        metrics.add_metric(metric_names.EXPIRED_UNPROCESSED, MetricUnit.Count, source_report.expired)
        metrics.flush_metrics()
        for lane, age in source_report.lane_ages(now, source_lanes(source, lanes), whole=whole).items():
            metrics.add_dimension(metric_names.SOURCE, source)
            metrics.add_dimension(metric_names.LANE, lane)
            metrics.add_metric(metric_names.OLDEST_UNPROCESSED_AGE, MetricUnit.Seconds, age)
            metrics.flush_metrics()


def publish_quiet_accounts(accounts: AccountsSeen, now: float, metrics: Any, logger: Any) -> dict[str, int] | None:
    """Count the quiet accounts and publish the count; None when the items could not be read
    (logged as an error: the alarm then keeps its state, and the sweeper's errors show it)."""
    try:
        seen, pages = accounts.read_all()
    except (BotoCoreError, ClientError) as exc:
        logger.error("could not read the source accounts' last-seen items", extra={"error": str(exc)})
        return None
    quiet = quiet_accounts(seen, now, accounts.policy)
    metrics.add_metric(metric_names.QUIET_ACCOUNTS, MetricUnit.Count, len(quiet))
    metrics.flush_metrics()
    if quiet:
        # Account ids are businesses' Pages and WhatsApp accounts, not people.
        named = [
            {"account": s.account, "product": s.product, "quiet_seconds": round(s.quiet_for(now))}
            for s in quiet[:QUIET_NAMED]
        ]
        logger.warning("source accounts quiet", extra={"quiet": named, "quiet_count": len(quiet)})
    return {"accounts": len(seen), "quiet": len(quiet), "pages": pages}
