"""What a sweep reads: the pending rows, the lanes they wait in, and the ports that read them."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from pipeline.domain.envelope import Envelope


@dataclass(frozen=True)
class LaneView:
    """A lane as one sweep sees it."""

    depth: int | None
    """Visible, in flight and delayed; None when it could not be read."""
    in_flight: int = 0

    @property
    def empty(self) -> bool:
        return self.depth == 0


@dataclass(frozen=True)
class DepthSeen:
    """A sweep's reading of a lane's depth."""

    depth: int
    at: float


@dataclass(frozen=True)
class LaneHistory:
    """A stretch of a lane's recent past: what its consumers finished, by drain bucket start (see
    domain/jobs/admission.py), and the depths sweeps saw."""

    finished: Mapping[int, int]
    seen: Sequence[DepthSeen]

    def finished_after(self, at: float) -> int:
        # Whole buckets starting at or after `at` only: one straddling it may hold work finished
        # before, and counting that would call a row drained past too early.
        return sum(count for start, count in self.finished.items() if start >= at)


DEPTH_PREFIX = "sweep-depth#"
"""State-table items of depth sightings, one per lane per drain bucket, e.g.
`sweep-depth#messages#1767225600` (a later sweep in the same bucket overwrites an earlier one)."""


def depth_key(lane: str, bucket_start: int) -> str:
    return f"{DEPTH_PREFIX}{lane}#{bucket_start}"


@dataclass(frozen=True)
class PendingRow:
    """What the sweeper knows about one pending row, read consistently just before it decides."""

    source: str
    id: str
    lane: str
    tenant: str
    pending_since: float
    replays: int
    replays_recorded: bool
    """Whether the row has a `replays` attribute at all (the conditional update must say which)."""
    replayed_at: float | None = None
    send_failed: bool = False
    """The door put it here because its send failed (webhook rows only)."""
    envelope: Envelope | None = None
    problem: str | None = None
    """Why no envelope could be built from the row; such a row can only be abandoned."""
    expires_at: float | None = None
    """When the row's retention runs out (schema.TTL); None for a row written without one."""
    alive_at: float | None = None
    """When its task last said it was still at it, re-sending itself with its progress
    (schema.ALIVE_AT): a continuation went on the lane then."""

    def expired(self, now: float) -> bool:
        return self.expires_at is not None and self.expires_at <= now

    @property
    def never_sent(self) -> bool:
        """The door's send failed and the sweeper has not replayed it: no copy is queued anywhere."""
        return self.send_failed and self.replays == 0 and self.replayed_at is None

    @property
    def last_sent(self) -> float:
        """When its latest message (the original, a replay, or its task's continuation) went on the lane."""
        return max(t for t in (self.pending_since, self.replayed_at, self.alive_at) if t is not None)

    @property
    def last_touched(self) -> float | None:
        """When the sweeper replayed it or its task re-sent it, whichever was later; None for neither."""
        touched = [t for t in (self.replayed_at, self.alive_at) if t is not None]
        return max(touched) if touched else None


class ReplayFailed(RuntimeError):
    """The lane queue refused the replayed messages; their rows stay pending for the next sweep."""
