"""Asking for an erasure and reading its status, for Meta's callback (handlers/erasure.py) and for
`lanectl erase` alike: a job row written before its message is sent, as any job's is."""

from __future__ import annotations

from typing import Any

from pipeline.adapters.jobs_table import Created, Duplicate, JobsTable, TenantLimited
from pipeline.adapters.lane_queue import QueueSender
from pipeline.domain import erasure, jobs, retention
from pipeline.domain.envelope import Outgoing
from pipeline.domain.erasure import ErasuresBusy, Requested


class ErasureRequests:
    def __init__(
        self,
        jobs_table: JobsTable,
        queue: QueueSender,
        queue_url: str,
        *,
        queued_limit: int,
        deadline_seconds: float,
        keep_seconds: int,
    ) -> None:
        self._jobs = jobs_table
        self._queue = queue
        self._queue_url = queue_url
        self._queued_limit = queued_limit
        self._deadline_seconds = deadline_seconds
        self._keep_seconds = keep_seconds

    def request(self, sender_hash: str, requested_by: str, *, now: float, code: str | None = None) -> Requested:
        """Write the erasure's row, then send it. Raises ErasuresBusy, or JobsTableUnavailable
        when nothing could be written."""
        code = code or erasure.new_code()
        job_id = erasure.job_id(code)
        job = erasure.request(sender_hash, requested_by, now=now, deadline_seconds=self._deadline_seconds)
        expires_at = retention.expiry(now, self._keep_seconds, not_before=job.deadline)
        result = self._jobs.create(job_id, job, now, self._queued_limit, expires_at)
        if isinstance(result, TenantLimited):
            raise ErasuresBusy(f"{self._queued_limit} erasures are already queued")
        assert isinstance(result, Created | Duplicate)  # a duplicate is a code drawn twice: the same job
        try:
            self._queue.send(self._queue_url, Outgoing(jobs.envelope(job_id, job, now)))
        except Exception:  # the row is written and pending: the sweeper replays it
            return Requested(code=code, job_id=job_id, sent=False)
        return Requested(code=code, job_id=job_id, sent=True)

    def status(self, code: str) -> dict[str, Any] | None:
        """What the person holding `code` may see, or None for a code that names no erasure."""
        if not erasure.is_code(code):
            return None
        job = self._jobs.get(erasure.job_id(code))
        if job is None or job.kind != erasure.KIND:
            return None
        return erasure.public_status(code, job)
