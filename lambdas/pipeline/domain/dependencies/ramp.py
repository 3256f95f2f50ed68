"""The paced ramp a lane resumes on: MaximumConcurrency from the SQS minimum up to the lane's
budget step by step, so a dependency that has just recovered is not met by the whole backlog at
once. `lanectl lane resume --ramp` (ops/commands/lanes.py) walks it in one run; a function that resumes a
lane on a schedule takes one step a run (`next_level`)."""

from __future__ import annotations

import math

RAMP_FLOOR = 2
"""MaximumConcurrency's minimum for an SQS event source."""
MIN_STEP_SECONDS = 10.0
"""A mapping takes a few seconds to apply an update and refuses another meanwhile."""


def ramp_levels(start: int, target: int, seconds: float) -> list[int]:
    """Concurrency levels from `start` to `target`, evenly spread, at most one per MIN_STEP_SECONDS."""
    if target <= start:
        return [target]
    steps = max(1, min(target - start, math.floor(seconds / MIN_STEP_SECONDS)))
    levels = [round(start + (target - start) * i / steps) for i in range(steps + 1)]
    return sorted(set(levels))


def next_level(current: int | None, target: int, ramp_seconds: float, step_seconds: float) -> int:
    """The level after `current` (None: the lane is stopped) on a ramp of `ramp_seconds` taken one
    step every `step_seconds`: the floor first, then the same evenly spread levels `ramp_levels`
    gives for as many steps as that pace fits in the ramp, never past `target`."""
    if current is None:
        return min(RAMP_FLOOR, target)
    if current >= target:
        return target
    steps = max(1, math.floor(ramp_seconds / max(step_seconds, MIN_STEP_SECONDS)))
    levels = ramp_levels(RAMP_FLOOR, target, steps * MIN_STEP_SECONDS)
    return next((level for level in levels if level > current), target)
