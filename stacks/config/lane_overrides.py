"""How an environment departs from the lane catalogue, said in one place and typed.

An environment takes the catalogue's lanes as they are (prod), scales them for a fraction of
production's traffic (`scale`), and changes named settings of named lanes (`LaneOverride`). Nothing
else changes a lane: a setting an environment does not name is the catalogue's.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields, replace
from typing import Any

from stacks.config.lanes import FailureRatePause, Lane, LanePolicy, RetryPolicy, Tick, Traffic

POLICY_FIELDS = frozenset(f.name for f in fields(LanePolicy))
LANE_FIELDS = frozenset(f.name for f in fields(Lane)) - {"policy"}
"""With POLICY_FIELDS, where each override field lands (a test holds every one to one of them)."""


@dataclass(frozen=True, kw_only=True)
class LaneOverride:
    """Settings one environment changes in one lane; None keeps the catalogue's. (So an override
    cannot remove a default expiry or a tick; no environment needs to.)"""

    objective_seconds: int | None = None
    timeout_seconds: int | None = None
    batch_window_seconds: int | None = None
    max_concurrency: int | None = None
    reserved_concurrency: int | None = None
    retry: RetryPolicy | None = None
    default_expiry_seconds: int | None = None
    defer_seconds: int | None = None
    service_seconds: float | None = None
    task_options: tuple[tuple[str, str], ...] | None = None
    traffic: Traffic | None = None
    tick: Tick | None = None
    pause_on_failures: FailureRatePause | None = None

    def changes(self) -> dict[str, Any]:
        """What this override sets, by field name."""
        return {f.name: getattr(self, f.name) for f in fields(self) if getattr(self, f.name) is not None}

    def apply(self, lane: Lane) -> Lane:
        """The lane with these settings changed; the result is validated as the catalogue's is."""
        changes = self.changes()
        policy = {name: value for name, value in changes.items() if name in POLICY_FIELDS}
        rest = {name: value for name, value in changes.items() if name not in POLICY_FIELDS}
        try:
            return replace(lane, policy=replace(lane.policy, **policy), **rest)
        except ValueError as exc:
            raise ValueError(f"override of lane {lane.name!r}: {exc}") from exc


def scaled(lane: Lane, scale: float) -> Lane:
    """The lane sized for `scale` of production's traffic: peak traffic, MaximumConcurrency and the
    reservation scaled alike (the reservation keeps its proportion to MaximumConcurrency, and
    stays at or above it; the SQS event source needs a MaximumConcurrency of 2 at least)."""
    if scale == 1:
        return lane
    concurrency = max(2, round(lane.policy.max_concurrency * scale))
    return replace(
        lane,
        policy=replace(lane.policy, max_concurrency=concurrency),
        reserved_concurrency=max(concurrency, round(lane.reserved_concurrency * scale)),
        traffic=replace(lane.traffic, peak_per_second=lane.traffic.peak_per_second * scale),
    )


def lanes_for(
    catalogue: tuple[Lane, ...], *, scale: float = 1.0, overrides: Mapping[str, LaneOverride] | None = None
) -> tuple[Lane, ...]:
    """The catalogue scaled, then overridden by lane name. An override naming no lane is an error."""
    overrides = dict(overrides or {})
    names = [lane.name for lane in catalogue]
    unknown = sorted(set(overrides) - set(names))
    if unknown:
        raise ValueError(f"overrides name unknown lanes {', '.join(unknown)}; lanes: {', '.join(names)}")
    if not 0 < scale <= 1:
        raise ValueError(f"scale must be in (0, 1], got {scale}")
    result = []
    for lane in catalogue:
        sized = scaled(lane, scale)
        override = overrides.get(lane.name)
        result.append(override.apply(sized) if override else sized)
    return tuple(result)
