"""Side-bookkeeping when a job reaches a terminal state: the one place to wire it.

The jobs API counts each tenant's queued jobs per lane (its 429 limit, `jobs.queued_key`). A job
leaves that count exactly once, when it first leaves `queued`. These writes go into the same
commit as the status change, whose compare-and-set on the status read is what makes "first"
exact: a redelivered or concurrent copy finds the status changed and commits nothing.

A job finished from `failed` (a DLQ redrive) or `abandoned` (the sweeper) was taken off the count
when it got there, so it is not taken off again.
"""

from __future__ import annotations

from pipeline import schema
from pipeline.domain.effects import OnConflict, Table, Update, Write
from pipeline.domain.envelope import Envelope
from pipeline.domain.jobs import requests as jobs


def queued_decrement(lane: str, tenant: str) -> Update:
    """Take one job off a tenant's queued count. Skipped (not failed) when the count is already
    zero or missing, so a counter lost to a manual edit can never block a job from finishing."""
    return Update(
        table=Table.STATE,
        key={schema.PK: jobs.queued_key(lane, tenant)},
        expression="ADD #queued :minus_one",
        condition="#queued >= :one",
        names={"#queued": jobs.QUEUED},
        values={":minus_one": -1, ":one": 1},
        on_conflict=OnConflict.SKIP,
    )


def job_finished(envelope: Envelope, previous_status: str | None, new_status: str) -> tuple[Write, ...]:
    """Writes to commit with a row's move from `previous_status` to the terminal `new_status`."""
    if envelope.source != jobs.SOURCE or previous_status != schema.RowStatus.QUEUED:
        return ()
    if new_status not in schema.RowStatus.TERMINAL:
        return ()
    return (queued_decrement(envelope.lane, envelope.tenant),)
