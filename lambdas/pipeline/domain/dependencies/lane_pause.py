"""A lane that pauses itself: which lanes may, and for which reasons.

A dependency that refuses the lane itself (the model it may not call, Meta's token revoked) fails
every record alike until someone fixes the account, so the consumer stops its lane instead of
spending the records' receives into the DLQ (domain/consumer/batch.py, domain/consumer/settling.py).
"""

from __future__ import annotations

from pipeline.domain.dependencies.meta_send import TokenInvalid
from pipeline.domain.dependencies.model import ModelRefused

MODEL_REFUSED = ModelRefused.reason
TOKEN_INVALID = TokenInvalid.reason


def pause_reasons(*, calls_model: bool, sends: bool) -> tuple[str, ...]:
    """The reasons a lane pauses itself for: one alarm each."""
    return (*((MODEL_REFUSED,) if calls_model else ()), *((TOKEN_INVALID,) if sends else ()))
