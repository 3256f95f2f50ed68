"""The lane probe's policy: which lanes it watches, what it retries for each, and its ramp
(domain/dependencies/lane_probe.py has the rule, handlers/lane_probe.py the wiring)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ProbedLane:
    name: str
    mapping_id: str
    """The lane's event source mapping: the only ones the probe's role may read and update."""
    max_concurrency: int
    """Where the ramp ends: the catalogue's MaximumConcurrency for the lane."""
    model_id: str | None
    """The lane's model (or inference profile), retried with a one-token Converse call; None: it has none."""
    sends: bool
    """It sends through Meta: the access token is retried with `GET /me`."""


@dataclass(frozen=True)
class ProbeSettings:
    period_seconds: float
    """The schedule's period: one ramp step a run."""
    ramp_seconds: float
    """How long the ramp from MaximumConcurrency 2 to the lane's full one should take."""
    lanes: tuple[ProbedLane, ...]

    def __post_init__(self) -> None:
        if self.period_seconds <= 0 or self.ramp_seconds <= 0:
            raise ValueError("probe settings need period_seconds > 0 and ramp_seconds > 0")
        if len({lane.name for lane in self.lanes}) != len(self.lanes):
            raise ValueError("probe settings name a lane twice")
