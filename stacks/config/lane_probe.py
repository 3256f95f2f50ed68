"""The lane probe's schedule and ramp (stacks/constructs/lane_probe.py, domain/dependencies/lane_probe.py)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class LaneProbeConfig:
    period_seconds: int = 60
    """How often a lane that paused itself is retried, and the ramp's step when it is healthy.
    EventBridge's smallest rate is a minute; the local runtime runs the configured period."""
    ramp_seconds: int = 600
    """The paced ramp back, from MaximumConcurrency 2 to the lane's own: one step a run, as many
    steps as fit (domain/dependencies/ramp.py next_level), as `lanectl lane resume --ramp 10m` would."""
    failing_alarm_seconds: int = 900
    """A probe that found its lane's dependency still failing on every run this long pages: the
    pause alarm said why once; this says nobody has fixed it yet."""

    def __post_init__(self) -> None:
        if self.period_seconds < 1 or self.ramp_seconds < 1:
            raise ValueError("lane probe needs period_seconds >= 1 and ramp_seconds >= 1")
        if self.failing_alarm_seconds < self.period_seconds:
            raise ValueError("lane probe's failing_alarm_seconds must be at least one period")
