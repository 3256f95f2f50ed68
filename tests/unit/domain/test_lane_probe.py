"""The lane probe's rule: which lanes it retries, and the step it takes once the dependency answers."""

from __future__ import annotations

import pytest

from pipeline.domain.dependencies.lane_pause import BY_LANE, BY_OPERATOR, PauseMark
from pipeline.domain.dependencies.lane_probe import FINISH, LEAVE, PROBE, MappingState, next_step, verdict

PAUSED = MappingState("Disabled", 40)


def mark(by: str = BY_LANE) -> PauseMark:
    return PauseMark(lane="ai", by=by, reason="meta_token_invalid", paused_at=1.0)


@pytest.mark.parametrize(
    ("the_mark", "mapping", "expected"),
    [
        (None, PAUSED, LEAVE),  # nobody marked it: not the probe's to resume
        (mark(BY_OPERATOR), PAUSED, LEAVE),  # an operator's pause stands
        (mark(), MappingState("Disabling", 40), LEAVE),  # mid-change: Lambda refuses an update
        (mark(), MappingState("Updating", 2), LEAVE),
        (mark(), PAUSED, PROBE),  # paused by itself
        (mark(), MappingState("Enabled", 10), PROBE),  # on its ramp
        (mark(), MappingState("Enabled", 40), FINISH),  # the ramp is over: the mark goes
        (mark(), MappingState("Enabled", None), FINISH),  # running with no cap at all
    ],
)
def test_verdict(the_mark, mapping, expected):
    assert verdict(the_mark, mapping, target=40) == expected


def test_a_stopped_lane_starts_at_the_ramps_floor_whatever_its_old_level():
    assert next_step(PAUSED, target=40, ramp_seconds=600, step_seconds=60) == 2


def test_a_lane_on_its_ramp_goes_one_step_up_and_never_past_its_target():
    # A 10-minute ramp at one step a minute: ten steps from 2 to 40
    levels = [2]
    while levels[-1] < 40:
        levels.append(next_step(MappingState("Enabled", levels[-1]), 40, 600, 60))
    assert levels == [2, 6, 10, 13, 17, 21, 25, 29, 32, 36, 40]
