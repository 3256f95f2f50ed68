"""A lane's pause kept through a deploy: a stack update that touches a mapping may send it the
template's state, which knows nothing of an operator's pause or of a lane's own. At the end of a
deploy (handlers/after_deploy.py, stacks/constructs/after_deploy.py says when it runs), every lane
with a pause mark whose mapping runs is stopped again.
"""

from __future__ import annotations

from collections.abc import Mapping

from pipeline.domain.dependencies.lane_pause import PauseMark

RUNNING = frozenset({"Enabled", "Enabling", "Updating"})
"""Mapping states in which the mapping polls, or will: a paused lane's must be Disabled."""


def lanes_to_pause_again(marks: Mapping[str, PauseMark], states: Mapping[str, str]) -> list[str]:
    """Lanes with a pause mark whose mapping runs. A lane the probe was ramping back is paused
    again too: the deploy may have set its MaximumConcurrency to the template's, and the probe
    then starts its ramp over from the bottom once the dependency answers."""
    return sorted(lane for lane in marks if states.get(lane) in RUNNING)
