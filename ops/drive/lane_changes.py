"""A consumer's LANE variable with some policy fields changed: how the demo, the scenarios and the
tests change a running lane (through its function's environment, as an operator could)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from pipeline.settings import codec
from pipeline.settings.lane_policy import LanePolicy


def changed_lane(policy_json: str, *, options: Mapping[str, str | None] | None = None, **changes: Any) -> str:
    """`policy_json` with fields replaced (typed: `retry=RetryPolicy(...)`) and its task options
    merged with `options` (None removes one), checked as the function will check it."""
    policy = codec.loads(LanePolicy, policy_json)
    merged = dict(policy.task_options)
    for key, value in (options or {}).items():
        if value is None:
            merged.pop(key, None)
        else:
            merged[key] = value
    return codec.dumps(replace(policy, task_options=tuple(merged.items()), **changes))
