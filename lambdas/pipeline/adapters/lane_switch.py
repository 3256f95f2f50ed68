"""A lane's event source mapping through Lambda's API: the consumer pausing its own lane, the
probe reading and raising a lane's mapping on its ramp, and the end of a deploy stopping again a
paused lane's mapping the deploy set running (handlers/after_deploy.py).

The mapping's id cannot be in the consumer's own variables (the mapping is made from the function,
so the template would loop); the consumer finds it by its own function name, once per instance.
Its role may update that one mapping only (stacks/constructs/self_pause.py). The probe is given the
ids of the mappings it watches (stacks/constructs/lane_probe.py).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from botocore.exceptions import ClientError

from pipeline.adapters.pause_marks import PauseMarks
from pipeline.domain.dependencies.lane_pause import PauseNotMarked
from pipeline.domain.dependencies.lane_probe import MappingState

STOP_TRIES = 10
"""Seconds a stop waits out a mapping Lambda is still changing: well within the probe's 30 s."""


class MappingNotFound(RuntimeError):
    pass


class MappingSwitch:
    def __init__(self, client: Any, function_name: str, lane: str, marks: PauseMarks) -> None:
        self._client = client
        self._function = function_name
        self._lane = lane
        self._marks = marks
        self._uuid: str | None = None

    def pause(self, reason: str) -> None:
        self._client.update_event_source_mapping(UUID=self._mapping(), Enabled=False)
        # After the disable, never before: a mark with the mapping still running would read to the
        # probe as a lane resumed in full, and be deleted.
        try:
            self._marks.paused_by_lane(self._lane, reason)
        except Exception as exc:
            raise PauseNotMarked(f"the lane is paused but its mark was not written: {type(exc).__name__}") from exc

    def _mapping(self) -> str:
        if self._uuid is None:
            found = self._client.list_event_source_mappings(FunctionName=self._function)
            mappings = found.get("EventSourceMappings") or []
            if not mappings:
                raise MappingNotFound(f"no event source mapping invokes {self._function}")
            self._uuid = str(mappings[0]["UUID"])
        return self._uuid


class LaneMappings:
    """The probe's view of the mappings it was given."""

    def __init__(self, client: Any, *, sleep: Callable[[float], None] = time.sleep) -> None:
        self._client = client
        self._sleep = sleep

    def state(self, uuid: str) -> MappingState:
        mapping = self._client.get_event_source_mapping(UUID=uuid)
        concurrency = (mapping.get("ScalingConfig") or {}).get("MaximumConcurrency")
        return MappingState(str(mapping.get("State") or ""), None if concurrency is None else int(concurrency))

    def run_at(self, uuid: str, level: int) -> None:
        self._client.update_event_source_mapping(UUID=uuid, Enabled=True, ScalingConfig={"MaximumConcurrency": level})

    def stop(self, uuid: str) -> None:
        """Disable the mapping, leaving its mark as it is (the deploy guard's pause kept), even one
        Lambda is still raising (it refuses any change to a mapping mid-change): tried again each
        second, a few times, within the probe's run."""
        for attempt in range(1, STOP_TRIES + 1):
            try:
                self._client.update_event_source_mapping(UUID=uuid, Enabled=False)
                return
            except ClientError as exc:
                if exc.response.get("Error", {}).get("Code") != "ResourceInUseException" or attempt == STOP_TRIES:
                    raise
            self._sleep(1.0)
