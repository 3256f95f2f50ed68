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
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from pipeline import settings
from pipeline.adapters.accounts_seen import AccountsSeen
from pipeline.adapters.clients import Clients
from pipeline.adapters.lane_queue import QueueSender
from pipeline.adapters.lane_replays import LaneReplays
from pipeline.adapters.lane_views import LaneBacklog
from pipeline.adapters.observability import logger_for, metrics_for
from pipeline.adapters.pending_rows import PendingRows
from pipeline.adapters.row_envelopes import job_envelope, webhook_envelope
from pipeline.adapters.sweep_metrics import publish_quiet_accounts, publish_sweep
from pipeline.adapters.tables import TableNames
from pipeline.adapters.transactions import Committer
from pipeline.domain.effects import Table
from pipeline.domain.sweep import bookkeeping
from pipeline.domain.sweep.run import Sweep, SweepReport
from pipeline.domain.sweep.verdict import patience_for

SERVICE = "sweeper"
STOP_MARGIN_MS = 5_000
"""Stop taking new rows this close to the Lambda timeout; the next run picks up the rest."""

Handler = Callable[[Any, Any], dict[str, Any]]


REPLAY_WORKERS = 16
"""Conditional writes (replay claims) and SendMessageBatch calls in flight at once: each is a
round trip of a few milliseconds, and one after another they held a sweep to about 150 rows a
second (adapters/lane_replays.py)."""


def _should_stop(context: Any) -> Callable[[], bool]:
    remaining = getattr(context, "get_remaining_time_in_millis", None)
    if remaining is None:
        return lambda: False
    return lambda: remaining() < STOP_MARGIN_MS


def create_handler(
    environ: Mapping[str, str],
    *,
    clock: Callable[[], float] = time.time,
    clients: Clients | None = None,
) -> Handler:
    sweeper_settings = settings.sweeper(environ)
    objectives = settings.lane_objectives(environ)
    queue_urls = settings.lane_queues(environ)
    tables = settings.Tables.from_environ(environ)
    clients = clients or Clients(region=settings.region(environ), credentials=settings.credentials(environ))
    logger = logger_for(environ, SERVICE)
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
    patience_by_lane = {lane: patience_for(sweeper_settings, objectives.get(lane, 0.0)) for lane in queue_urls}

    pool = ThreadPoolExecutor(max_workers=REPLAY_WORKERS, thread_name_prefix="sweeper")

    replay = LaneReplays(QueueSender(clients.sqs), queue_urls, pool)

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
                    bookkeeping=bookkeeping.abandoned_job,
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
            None if accounts is None else publish_quiet_accounts(accounts, now, metrics_for(environ, SERVICE), logger)
        )
        report = SweepReport()
        try:
            sweep.run(now, report)
        finally:
            # Whatever got measured is published even if a later step raised: the ages are
            # true, and an error here shows up as the function's Errors anyway.
            publish_sweep(metrics_for(environ, SERVICE), report, now, queue_urls, whole=not report.stopped_early)
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
