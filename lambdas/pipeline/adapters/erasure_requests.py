"""Asking for an erasure and reading its status, for Meta's callback (handlers/erasure.py) and for
`lanectl erase` alike: a job row written before its message is sent, as any job's is.

A person with an erasure pending is answered that erasure's code again (adapters/open_erasures.py):
a replayed or repeated request costs two reads, not a job and a full scan of the log."""

from __future__ import annotations

import secrets
from collections.abc import Callable
from typing import Any

from pipeline import schema
from pipeline.adapters.jobs_table import Created, Duplicate, JobsTable, TenantLimited
from pipeline.adapters.lane_queue import QueueSender
from pipeline.adapters.open_erasures import OpenErasure, OpenErasures
from pipeline.domain import retention
from pipeline.domain.envelope import Outgoing
from pipeline.domain.erasure import requests as erasure
from pipeline.domain.erasure.requests import ErasuresBusy, Requested
from pipeline.domain.jobs import requests as jobs

NONCE_BYTES = 16
CLAIM_ATTEMPTS = 3


class ErasureRequests:
    def __init__(
        self,
        jobs_table: JobsTable,
        queue: QueueSender,
        queue_url: str,
        *,
        open_erasures: OpenErasures,
        code_key: Callable[[], bytes],
        queued_limit: int,
        deadline_seconds: float,
        keep_seconds: int,
    ) -> None:
        """`code_key`: the sender key (adapters/sender_key.py), which codes are derived under."""
        self._jobs = jobs_table
        self._queue = queue
        self._queue_url = queue_url
        self._open = open_erasures
        self._code_key = code_key
        self._queued_limit = queued_limit
        self._deadline_seconds = deadline_seconds
        self._keep_seconds = keep_seconds

    def request(self, sender_hash: str, requested_by: str, *, now: float, linked: tuple[str, ...] = ()) -> Requested:
        """Write the erasure's row, then send it; or answer the pending one's code. Raises
        ErasuresBusy, or JobsTableUnavailable when nothing could be written."""
        job = erasure.request(
            sender_hash, requested_by, now=now, deadline_seconds=self._deadline_seconds, linked=linked
        )
        expires_at = retention.expiry(now, self._keep_seconds, not_before=job.deadline)
        for _ in range(CLAIM_ATTEMPTS):
            held = self._open.get(sender_hash)
            if held is not None and self._pending(held):
                return Requested(code=self._code(sender_hash, held), job_id=held.job_id, sent=True, repeated=True)
            nonce = secrets.token_hex(NONCE_BYTES)
            code = erasure.code_for(self._code_key(), sender_hash, nonce)
            opened = OpenErasure(job_id=erasure.job_id(code), nonce=nonce)
            if self._open.claim(sender_hash, opened, held, expires_at):
                return self._create(opened.job_id, code, job, now, expires_at)
        raise ErasuresBusy("other requests for this person keep arriving at once; try again")

    def _pending(self, held: OpenErasure) -> bool:
        found = self._jobs.get(held.job_id)
        return found is not None and found.status == schema.RowStatus.QUEUED

    def _code(self, sender_hash: str, held: OpenErasure) -> str:
        return erasure.code_for(self._code_key(), sender_hash, held.nonce)

    def _create(self, job_id: str, code: str, job: jobs.JobRequest, now: float, expires_at: int) -> Requested:
        result = self._jobs.create(job_id, job, now, self._queued_limit, expires_at)
        if isinstance(result, TenantLimited):
            # The open item now names a job that does not exist: the next request claims it anew.
            raise ErasuresBusy(f"{self._queued_limit} erasures are already queued")
        assert isinstance(result, Created | Duplicate)  # a duplicate is a nonce drawn twice: the same job
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
