"""How long data is kept, as the functions are given it (read back by settings/readers.py)."""

from __future__ import annotations

from dataclasses import dataclass, fields


@dataclass(frozen=True)
class RetentionSettings:
    """RETENTION_SETTINGS: seconds each kind of data is kept before DynamoDB's TTL deletes it
    (stacks/config/privacy.Retention). Every function that writes an item stamps its expiry."""

    raw_deliveries_seconds: int
    jobs_seconds: int
    effects_seconds: int
    erasure_requests_seconds: int

    def __post_init__(self) -> None:
        if min(getattr(self, f.name) for f in fields(self)) < 1:
            raise ValueError("retention settings need every period >= 1 second")
