"""The lane probe's rule: what to do with one lane on one scheduled run.

A lane whose consumer paused it (a `PauseMark` by the lane) is retried on its dependency with one
cheap real call; healthy, its mapping goes one step up the paced ramp (domain/dependencies/ramp.py
`next_level`), from MaximumConcurrency 2 to the lane's own, and the mark is deleted when the ramp
ends. Unhealthy, the lane stays where it is. A lane an operator paused, or one without a mark, is
left alone: the probe never resumes what someone else stopped. Nothing here calls AWS.

No lock is taken between a run's read and its update: a consumer that pauses the lane again in
between has its disable undone by that run's step, once; its next refused record pauses the lane
again, and the records meanwhile are held as before, so a race costs a few held records, no attempt.
"""

from __future__ import annotations

from dataclasses import dataclass

from pipeline.domain.dependencies.lane_pause import BY_LANE, PauseMark
from pipeline.domain.dependencies.ramp import next_level

TRANSITIONS = frozenset({"Creating", "Enabling", "Disabling", "Updating"})
"""A mapping in these states refuses an update: the lane waits for the next run."""
ENABLED = frozenset({"Enabled", "Enabling"})


@dataclass(frozen=True)
class MappingState:
    state: str
    concurrency: int | None

    @property
    def enabled(self) -> bool:
        return self.state in ENABLED


LEAVE = "leave"
"""Nothing to do: no mark, an operator's, or a mapping mid-change."""
PROBE = "probe"
"""Paused by itself, or on its ramp: retry its dependency, then `next_step`."""
FINISH = "finish"
"""Running at its full concurrency with the mark still there: the ramp is over, delete the mark."""


def verdict(mark: PauseMark | None, mapping: MappingState, target: int) -> str:
    if mark is None or mark.by != BY_LANE:
        return LEAVE
    if mapping.state in TRANSITIONS:
        return LEAVE
    if mapping.enabled and (mapping.concurrency or target) >= target:
        return FINISH
    return PROBE


def next_step(mapping: MappingState, target: int, ramp_seconds: float, step_seconds: float) -> int:
    """The level a healthy lane goes to on this run: the ramp's floor when it is stopped, else one step up."""
    current = mapping.concurrency if mapping.enabled else None
    return next_level(current, target, ramp_seconds, step_seconds)
