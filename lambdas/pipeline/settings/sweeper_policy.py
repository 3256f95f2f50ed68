"""The sweeper's policy: how long a row may sit before it is called lost, and how often it may be
replayed before it is abandoned (domain/sweep/verdict.py has the rule)."""

from __future__ import annotations

from dataclasses import dataclass

MAX_PAGE_ROWS = 100
"""One BatchGetItem's worth of keys."""


@dataclass(frozen=True)
class SweeperSettings:
    grace_seconds: float
    patience_seconds: float
    """While its lane is busy, a row is left alone this long after its latest send."""
    max_replays: int
    page_rows: int
    """Pending rows read (one index query, one BatchGetItem) and judged at a time."""
    patience_cap_seconds: float
    """Past patience, a busy lane's row is left alone until the lane drains past it, or this long."""
    run_seconds: float
    """How long one sweep keeps reading pages: a little less than its schedule's period, so one
    sweep ends before the next starts. What it has not reached the next one resumes."""

    def __post_init__(self) -> None:
        if self.grace_seconds <= 0 or self.patience_seconds < self.grace_seconds:
            raise ValueError("sweeper settings need 0 < grace_seconds <= patience_seconds")
        # A cap below patience is not refused, only never reached (see sweep_verdict.patience_for): a
        # sweeper switched off by a grace period beyond any run raises patience with it.
        if self.patience_cap_seconds <= 0:
            raise ValueError("sweeper settings need patience_cap_seconds > 0")
        if self.max_replays < 1 or not 1 <= self.page_rows <= MAX_PAGE_ROWS:
            raise ValueError(f"sweeper settings need max_replays >= 1 and 1 <= page_rows <= {MAX_PAGE_ROWS}")
        if self.run_seconds <= 0:
            raise ValueError("sweeper settings need run_seconds > 0")
