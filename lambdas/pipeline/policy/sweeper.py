"""The sweeper's policy: how long a row may sit before it is called lost, and how often it may be
replayed before it is abandoned (domain/sweep_verdict.py has the rule)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class SweeperSettings:
    grace_seconds: float
    patience_seconds: float
    """While its lane is busy, a row is left alone this long after its latest send."""
    max_replays: int
    rows_per_run: int
    patience_cap_seconds: float
    """Past patience, a busy lane's row is left alone until the lane drains past it, or this long."""

    def __post_init__(self) -> None:
        if self.grace_seconds <= 0 or self.patience_seconds < self.grace_seconds:
            raise ValueError("sweeper settings need 0 < grace_seconds <= patience_seconds")
        # A cap below patience is not refused, only never reached (see sweep_verdict.patience_for): a
        # sweeper switched off by a grace period beyond any run raises patience with it.
        if self.patience_cap_seconds <= 0:
            raise ValueError("sweeper settings need patience_cap_seconds > 0")
        if self.max_replays < 1 or self.rows_per_run < 1:
            raise ValueError("sweeper settings need max_replays >= 1 and rows_per_run >= 1")
