"""`lanectl lane pause` / `lane resume [--ramp]`: stop and restart a lane's consumer.

Pausing disables the lane's event source mapping: the queue keeps accepting work (nothing is
refused or lost) and messages wait, so the lane's age alarm will fire past its objective. It also
marks the lane paused by an operator in the state table (domain/dependencies/lane_pause.py), so the lane probe,
which resumes a lane that paused itself, leaves it alone; resuming deletes the mark. Resuming
enables it at the catalogue's MaximumConcurrency, or, with --ramp, from 2 (the SQS minimum) up to
it step by step, so a dependency that has just recovered is not met by the whole backlog at once.
"""

from __future__ import annotations

import argparse
import re
from typing import Any

from ops.context import Context
from ops.errors import FAILED, INTERRUPTED, OK, OpsError
from ops.output import duration
from ops.resolve import known_lane
from pipeline.adapters.pause_marks import PauseMarks
from pipeline.domain.dependencies.ramp import RAMP_FLOOR, ramp_levels

SETTLE_TIMEOUT_SECONDS = 120.0
_TRANSITIONS = ("Creating", "Enabling", "Disabling", "Updating")
_DURATION = re.compile(r"^(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?$")


def parse_duration(text: str) -> float:
    """`90s`, `5m`, `1h30m`, `1m30s`, or plain seconds."""
    value = text.strip().lower()
    if value.isdigit():
        seconds = float(value)
    else:
        match = _DURATION.match(value)
        if not value or match is None:
            raise ValueError(f"not a duration: {text!r} (use e.g. 90s, 5m, 1h30m)")
        hours, minutes, secs = (int(g) if g else 0 for g in match.groups())
        seconds = float(hours * 3600 + minutes * 60 + secs)
    if seconds <= 0:
        raise ValueError(f"a ramp must last longer than 0 s, got {text!r}")
    return seconds


def _steps(levels: list[int]) -> str:
    shown = [str(level) for level in levels]
    if len(shown) > 12:
        shown = [*shown[:3], "…", *shown[-2:]]
    return " → ".join(shown).replace("→ … →", "…")


def _mapping(ctx: Context, lane_name: str) -> tuple[Any, str, dict[str, Any]]:
    resources = ctx.deployment().lane(lane_name)
    client = ctx.aws.client("lambda")
    return client, resources.mapping_id, client.get_event_source_mapping(UUID=resources.mapping_id)


def _concurrency(mapping: dict[str, Any]) -> int | None:
    value = (mapping.get("ScalingConfig") or {}).get("MaximumConcurrency")
    return None if value is None else int(value)


def _settled(ctx: Context, client: Any, uuid: str) -> dict[str, Any]:
    """Wait until the mapping is not mid-transition (Lambda refuses updates while it is)."""
    waited = 0.0
    while True:
        mapping = client.get_event_source_mapping(UUID=uuid)
        if mapping.get("State") not in _TRANSITIONS:
            return dict(mapping)
        if waited >= SETTLE_TIMEOUT_SECONDS:
            raise OpsError(f"the mapping {uuid} has been {mapping.get('State')} for {waited:.0f} s; try again", FAILED)
        ctx.sleep(1.0)
        waited += 1.0


def _marks(ctx: Context) -> PauseMarks:
    return PauseMarks(ctx.aws.client("dynamodb"), ctx.deployment().output("StateTableName"), ctx.clock)


def pause(ctx: Context, lane_name: str) -> int:
    known_lane(ctx.env, lane_name)
    # Before the mapping is read: a lane that paused itself becomes the operator's, which the probe
    # leaves, and a probe resuming it at this moment either sees this mark first or has already
    # raised the mapping, which is then read here as running and stopped.
    _marks(ctx).paused_by_operator(lane_name)
    client, uuid, mapping = _mapping(ctx, lane_name)
    if mapping.get("State") in ("Disabled", "Disabling"):
        ctx.console.line(
            f"{lane_name} is already paused (mapping {uuid} is {mapping.get('State')}); it is now held by you: "
            "the lane probe will not resume it"
        )
        return OK
    client.update_event_source_mapping(UUID=uuid, Enabled=False)
    state = _settled(ctx, client, uuid).get("State")
    ctx.console.line(f"paused {lane_name}: mapping {uuid} is {state}")
    ctx.console.line(
        "the queue keeps accepting work and nothing is lost; messages wait, so the lane's age alarm will fire "
        f"past its objective. Resume with: lanectl lane resume {lane_name} --env {ctx.env.name} --ramp 5m"
    )
    return OK


def resume(ctx: Context, lane_name: str, ramp: float | None) -> int:
    lane = known_lane(ctx.env, lane_name)
    target = lane.policy.max_concurrency
    client, uuid, mapping = _mapping(ctx, lane_name)
    running = mapping.get("State") in ("Enabled", "Enabling")
    # Whoever paused it, the lane is the operator's to resume now: no mark is left for the probe.
    _marks(ctx).resumed_by_operator(lane_name)
    if ramp is None:
        client.update_event_source_mapping(UUID=uuid, Enabled=True, ScalingConfig={"MaximumConcurrency": target})
        state = _settled(ctx, client, uuid).get("State")
        ctx.console.line(f"resumed {lane_name}: mapping {uuid} is {state} at MaximumConcurrency {target}")
        return OK
    # Ramping never lowers a lane that is already running: it goes on from where it is.
    start = RAMP_FLOOR if not running else min(target, _concurrency(mapping) or target)
    levels = ramp_levels(start, target, ramp)
    interval = ramp / max(1, len(levels) - 1)
    ctx.console.line(
        f"resuming {lane_name} with a {duration(ramp)} ramp: MaximumConcurrency "
        f"{_steps(levels)}, one step every {duration(interval)}; Ctrl-C holds the level"
    )
    started = ctx.clock()
    current = None
    try:
        for index, level in enumerate(levels):
            if index:
                ctx.sleep(interval)
            _settled(ctx, client, uuid)
            client.update_event_source_mapping(UUID=uuid, Enabled=True, ScalingConfig={"MaximumConcurrency": level})
            current = level
            ctx.console.line(f"  +{duration(ctx.clock() - started)}  MaximumConcurrency {level} of {target}")
    except KeyboardInterrupt:
        held = "not started" if current is None else f"held at MaximumConcurrency {current}"
        ctx.console.line(
            f"interrupted: {lane_name} {held}; go straight to {target} with: "
            f"lanectl lane resume {lane_name} --env {ctx.env.name}"
        )
        return INTERRUPTED
    ctx.console.line(f"resumed {lane_name}: mapping {uuid} at MaximumConcurrency {target}")
    return OK


def duration_argument(text: str) -> float:
    """argparse type for --ramp: a bad value is a usage error (exit 2) with the reason."""
    try:
        return parse_duration(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
