"""A lane that pauses itself: which lanes may, for which reasons, and the mark that says so.

A dependency that refuses the lane itself (the model it may not call, Meta's token revoked), or
fails most of the lane's calls for a while (domain/dependencies/failure_rate.py), fails every record alike until
it recovers, so the consumer stops its lane instead of spending the records' receives into the DLQ
(domain/consumer/batch.py, domain/consumer/settling.py).

Who paused a lane is kept in one state-table item per lane (`pause_key`), so the probe
(domain/dependencies/lane_probe.py) resumes only what paused itself: the consumer writes `by = lane` after its
mapping is disabled, unless an operator's pause (`by = operator`, `lanectl lane pause`) is there;
`lanectl lane resume` deletes the item, and the probe deletes it when its ramp reaches the lane's
MaximumConcurrency. An item rather than tags on the mapping: it costs a write unit per batch that
pauses and half a read unit per lane per probe run (adapters/pause_marks.py), where tags would need
lambda:TagResource for every consumer and the CLI, a ListTags per mapping per run, and could not be
written conditionally, so a consumer's late pause would overwrite an operator's.
"""

from __future__ import annotations

from dataclasses import dataclass

from pipeline.domain.dependencies.meta_send import TokenInvalid
from pipeline.domain.dependencies.model import ModelRefused

MODEL_REFUSED = ModelRefused.reason
TOKEN_INVALID = TokenInvalid.reason
MODEL_FAILING = "model_failing"
"""Most of the lane's model calls failed for a while (unavailable, timed out): see failure_rate.py."""
META_FAILING = "meta_failing"
"""Most of the lane's sends through Meta failed for a while (5xx, unreachable)."""

MODEL = "model"
META = "meta"
DEPENDENCY_OF = {MODEL_REFUSED: MODEL, MODEL_FAILING: MODEL, TOKEN_INVALID: META, META_FAILING: META}
"""The dependency the probe retries for each reason a lane pauses for."""

BY_LANE = "lane"
BY_OPERATOR = "operator"
PAUSE_PREFIX = "lane-pause#"
MARK_DAYS = 14
"""A mark outlives any message its lane holds (SQS keeps one 14 days at most): a pause that long has
lost its work already, and the item is left to TTL."""


class PauseNotMarked(RuntimeError):
    """The lane is paused, but its mark was not written: the probe will not resume it (an operator must)."""


def pause_key(lane: str) -> str:
    return f"{PAUSE_PREFIX}{lane}"


@dataclass(frozen=True)
class PauseMark:
    """The state table's item for a paused lane."""

    lane: str
    by: str
    """BY_LANE (its consumer paused it: the probe may resume it) or BY_OPERATOR (it may not)."""
    reason: str
    paused_at: float


def pause_reasons(*, calls_model: bool, sends: bool, watches_failures: bool = False) -> tuple[str, ...]:
    """The reasons a lane pauses itself for: one alarm each."""
    reasons = [*((MODEL_REFUSED,) if calls_model else ()), *((TOKEN_INVALID,) if sends else ())]
    if watches_failures:
        reasons += [*((MODEL_FAILING,) if calls_model else ()), *((META_FAILING,) if sends else ())]
    return tuple(reasons)
