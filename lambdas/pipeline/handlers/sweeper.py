"""Scheduled sweeper: replays logged work the queues lost, abandons work that keeps failing, and
publishes the age of the oldest unfinished row (the event itself carries nothing it needs).

Where the environment watches Meta's source accounts (ACCOUNT_SILENCE), each run first reads
every account's last-seen item (one Query a 1 MB page of the accounts table's `accounts-seen`
partition, eventually consistent: 0.5 read unit per 4 KB, 34 at 1,000 accounts of 272 bytes) and
publishes `QuietAccounts`, the count of accounts that normally send and have been quiet too long
(domain/webhook/account_silence.py), with a line naming them. One series and one alarm, whatever the
number of accounts.

It runs on its own function and schedule, never on a lane it watches: a watchdog queued behind the
backlog it exists to detect would go quiet exactly when it matters.
"""

from __future__ import annotations

import functools
import os
import time
from collections.abc import Callable, Collection, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from pipeline import metric_names, schema, settings
from pipeline.adapters.accounts_seen import AccountsSeen
from pipeline.adapters.clients import Clients
from pipeline.adapters.lane_queue import BATCH_LIMIT as SEND_BATCH
from pipeline.adapters.lane_queue import QueueSender
from pipeline.adapters.lane_views import LaneBacklog
from pipeline.adapters.observability import MetricUnit, logger_for, metrics_for
from pipeline.adapters.pending_rows import PendingRows
from pipeline.adapters.row_envelopes import job_envelope, webhook_envelope
from pipeline.adapters.tables import TableNames
from pipeline.adapters.transactions import Committer
from pipeline.domain.consumer import job_bookkeeping
from pipeline.domain.effects import Table, Write
from pipeline.domain.envelope import Envelope, Outgoing
from pipeline.domain.sweep.inputs import PendingRow, ReplayFailed
from pipeline.domain.sweep.run import SWEPT_SOURCES, Sweep, SweepReport, source_lanes
from pipeline.domain.sweep.verdict import patience_for
from pipeline.domain.webhook.account_silence import quiet_accounts

SERVICE = "sweeper"
STOP_MARGIN_MS = 5_000
"""Stop taking new rows this close to the Lambda timeout; the next run picks up the rest."""

Handler = Callable[[Any, Any], dict[str, Any]]


REPLAY_WORKERS = 16
"""Conditional writes (replay claims) and SendMessageBatch calls in flight at once: each is a
round trip of a few milliseconds, and one after another they held a sweep to about 150 rows a
second."""


def _should_stop(context: Any) -> Callable[[], bool]:
    remaining = getattr(context, "get_remaining_time_in_millis", None)
    if remaining is None:
        return lambda: False
    return lambda: remaining() < STOP_MARGIN_MS


def _publish(metrics: Any, report: SweepReport, now: float, lanes: Collection[str], *, whole: bool) -> None:
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


QUIET_NAMED = 50
"""Quiet accounts named on the sweeper's line; the count has them all."""


def check_accounts(accounts: AccountsSeen, now: float, metrics: Any, logger: Any) -> dict[str, int] | None:
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


def abandoned_job_bookkeeping(row: PendingRow, status: str) -> tuple[Write, ...]:
    """What abandoning (or expiring) a job commits with its status change: the job leaves its
    tenant's queued count (the jobs API's 429 limit), exactly as a job the consumer finishes does.
    A row whose message could not be rebuilt has no trustworthy lane and tenant, so it has nothing
    to release."""
    if row.envelope is None:
        return ()
    return job_bookkeeping.job_finished(row.envelope, schema.RowStatus.QUEUED, status)


def create_handler(
    environ: Mapping[str, str],
    *,
    clock: Callable[[], float] = time.time,
    clients: Clients | None = None,
) -> Handler:
    sweeper_settings = settings.sweeper(environ)
    lanes = settings.lanes(environ)
    queue_urls = settings.lane_queues(environ)
    tables = settings.Tables.from_environ(environ)
    clients = clients or Clients(region=settings.region(environ), credentials=settings.credentials(environ))
    logger = logger_for(environ, SERVICE)
    sender = QueueSender(clients.sqs)
    silence = settings.account_silence(environ)
    accounts = (
        None
        if silence is None
        else AccountsSeen(clients.dynamodb, settings.require(environ, settings.EnvVar.ACCOUNTS_TABLE), silence)
    )
    table_names = TableNames(
        {
            Table.WEBHOOK_LOG: tables.webhook_log,
            Table.JOBS: tables.jobs,
            Table.STATE: tables.state,
            Table.DATA: tables.data,
        }
    )
    patience_by_lane = {
        lane: patience_for(sweeper_settings, lanes[lane].objective_seconds if lane in lanes else 0.0)
        for lane in queue_urls
    }

    pool = ThreadPoolExecutor(max_workers=REPLAY_WORKERS, thread_name_prefix="sweeper")

    def send_chunk(lane: str, chunk: Sequence[Envelope]) -> set[int] | Exception:
        try:
            failures = sender.send_batch(queue_urls[lane], [Outgoing(envelope) for envelope in chunk])
        except (BotoCoreError, ClientError) as exc:
            return exc
        refused = {failure.envelope.id for failure in failures}
        return {n for n, envelope in enumerate(chunk) if envelope.id in refused}

    def replay(lane: str, envelopes: Sequence[Envelope]) -> set[int]:
        """SendMessageBatch in chunks of ten, several at once; the positions SQS refused. Raises
        ReplayFailed when the lane took none of them."""
        offsets = range(0, len(envelopes), SEND_BATCH)
        results = list(pool.map(lambda offset: send_chunk(lane, envelopes[offset : offset + SEND_BATCH]), offsets))
        refused: set[int] = set()
        errors: list[Exception] = []
        for offset, result in zip(offsets, results, strict=True):
            if isinstance(result, Exception):
                errors.append(result)
                refused.update(range(offset, min(offset + SEND_BATCH, len(envelopes))))
            else:
                refused.update(offset + n for n in result)
        if errors and len(refused) == len(envelopes):
            raise ReplayFailed(str(errors[0]))
        return refused

    def handler(event: Any, context: Any) -> dict[str, Any]:
        del event  # a schedule tick; its content does not matter
        now = clock()
        started = time.monotonic()
        dynamodb = clients.dynamodb
        committer = Committer(dynamodb, table_names)
        sweep = Sweep(
            settings=sweeper_settings,
            stores=(
                PendingRows(
                    dynamodb,
                    tables.webhook_log,
                    source="webhook",
                    logical_table=Table.WEBHOOK_LOG,
                    to_envelope=webhook_envelope,
                    committer=committer,
                    state_table=tables.state,
                    pool=pool,
                    log=logger,
                ),
                PendingRows(
                    dynamodb,
                    tables.jobs,
                    source="job",
                    logical_table=Table.JOBS,
                    to_envelope=job_envelope,
                    committer=committer,
                    state_table=tables.state,
                    bookkeeping=abandoned_job_bookkeeping,
                    pool=pool,
                    log=logger,
                ),
            ),
            backlog=LaneBacklog(clients.sqs, dynamodb, tables.state, queue_urls, logger, now=now),
            replay=replay,
            patience_by_lane=patience_by_lane,
            log=logger,
            should_stop=_should_stop(context),
            run_over=lambda: time.monotonic() - started >= sweeper_settings.run_seconds,
        )
        # Before the sweep, which may run to its time budget.
        account_check = (
            None if accounts is None else check_accounts(accounts, now, metrics_for(environ, SERVICE), logger)
        )
        report = SweepReport()
        try:
            sweep.run(now, report)
        finally:
            # Whatever got measured is published even if a later step raised: the ages are
            # true, and an error here shows up as the function's Errors anyway.
            _publish(metrics_for(environ, SERVICE), report, now, queue_urls, whole=not report.stopped_early)
        summary = {**report.as_dict(), "elapsed_seconds": round(time.monotonic() - started, 3)}
        if account_check is not None:
            summary["accounts"] = account_check
        logger.info("sweep finished", extra={"summary": summary})
        return summary

    return handler


@functools.cache
def _built() -> Handler:
    return create_handler(os.environ)


def handler(event: Any, context: Any) -> dict[str, Any]:
    """The Lambda entry point: builds the handler on first call, so nothing reads the environment
    or makes clients at import time."""
    return _built()(event, context)
