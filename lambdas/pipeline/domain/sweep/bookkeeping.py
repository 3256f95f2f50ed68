"""What abandoning or expiring a job commits with its status change."""

from __future__ import annotations

from pipeline import schema
from pipeline.domain.effects import Write
from pipeline.domain.jobs import bookkeeping
from pipeline.domain.sweep.inputs import PendingRow


def abandoned_job(row: PendingRow, status: str) -> tuple[Write, ...]:
    """The job leaves its tenant's queued count (the jobs API's 429 limit), exactly as a job the
    consumer finishes does. A row whose message could not be rebuilt has no trustworthy lane and
    tenant, so it has nothing to release."""
    if row.envelope is None:
        return ()
    return bookkeeping.job_finished(row.envelope, schema.RowStatus.QUEUED, status)
