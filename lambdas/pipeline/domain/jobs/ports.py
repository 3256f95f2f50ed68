"""What the jobs API needs beyond the shared ports (domain/ports.py): the job store and the lanes'
state as admission sees it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

# Only annotations name these, so importing the ports loads no rules: the door's cold start
# pays only for what it runs.
if TYPE_CHECKING:
    from pipeline.domain.jobs.admission import LaneSnapshot
    from pipeline.domain.jobs.requests import CreateResult, Job, JobRequest


class JobStore(Protocol):
    def create(
        self,
        job_id: str,
        request: JobRequest,
        now: float,
        tenant_limit: int,
        expires_at: int,
        sender_hash: str | None = None,
    ) -> CreateResult:
        """The job row and its tenant's count in one transaction. Raises JobsTableUnavailable."""
        ...

    def get(self, job_id: str) -> Job | None: ...

    def mark_unsent(self, job_id: str, at: float) -> None:
        """Say the job's message never reached its lane, so the sweeper replays it after its grace
        period instead of waiting out a busy lane's patience. Raises JobsTableUnavailable."""
        ...


class LaneStates(Protocol):
    def get(self, lane: str) -> LaneSnapshot | None:
        """The lane as admission sees it, or None when it could not be read (admission admits)."""
        ...
