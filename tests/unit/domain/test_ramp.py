"""The paced ramp, shared by `lanectl lane resume --ramp` and a resume taken one step a run."""

from __future__ import annotations

from ops.commands import lanes
from pipeline.domain.dependencies.ramp import RAMP_FLOOR, next_level, ramp_levels


def test_lanectl_walks_the_ramp_the_domain_defines():
    assert lanes.ramp_levels is ramp_levels
    assert lanes.RAMP_FLOOR is RAMP_FLOOR


def test_a_stopped_lane_starts_at_the_floor():
    assert next_level(None, 20, 300, 60) == RAMP_FLOOR
    assert next_level(None, 1, 300, 60) == 1


def test_one_step_a_minute_over_five_minutes_reaches_the_target_in_five_steps():
    levels = [RAMP_FLOOR]
    while levels[-1] < 20:
        levels.append(next_level(levels[-1], 20, 300, 60))
    assert levels == [2, 6, 9, 13, 16, 20]
    assert next_level(20, 20, 300, 60) == 20


def test_at_lanectls_pace_the_steps_are_lanectls():
    assert [next_level(level, 20, 300, 10) for level in (2, 3, 19)] == [3, 4, 20]
    assert next_level(7, 5, 300, 10) == 5  # above a lowered target: the target
