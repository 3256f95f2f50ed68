"""The sweeper's policy: how long a row may sit before it is called lost, and how often it may be
replayed before it is abandoned (domain/sweep/verdict.py has the rule)."""

from __future__ import annotations

from dataclasses import dataclass

MAX_PAGE_ROWS = 100
"""One BatchGetItem's worth of keys."""


@dataclass(frozen=True, kw_only=True)
class SweeperSettings:
    """SWEEPER_SETTINGS, for the sweeper function: an environment's (`SweeperConfig.settings` in
    stacks/config/environments.py), written as it is and read back into this same type. The
    schedule's period is the stack's, not the function's: the stack derives `run_seconds` from it."""

    grace_seconds: float = 120
    """Rows younger than this are never considered lost."""
    patience_seconds: float = 15 * 60
    """While its lane is busy (has a backlog), a row is left alone this long after its latest send:
    late, not lost."""
    max_replays: int = 3
    page_rows: int = 100
    """Pending rows read (one index query, one BatchGetItem) and judged at a time; a sweep reads
    pages until `run_seconds` is up."""
    patience_cap_seconds: float = 60 * 60
    """Past patience, a busy lane's row is left alone until the lane drains past it, but no longer
    than this: the bound for a lane that stalls or cannot be read. An hour is as far back as the
    drain counts that show a lane draining are kept (domain/jobs/admission.py)."""
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
