"""Personal data's part of an environment, as typed Python: how long each kind of data is kept,
and how an erasure request is run. `stacks/config/environments.py` sets them per environment.

Meta's bodies carry phone numbers, names and message text, and so do the rows and items made from
them. Every item the pipeline writes carries `expires_at` (epoch seconds) and every table has
DynamoDB's TTL on that attribute, so nothing personal is kept past the period of its kind.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

from stacks.config.lanes import QUEUE_RETENTION_DAYS

DAY = 24 * 3600
MAX_DAYS = 3650
MAX_BACKUP_DAYS = 35
"""Point-in-time recovery keeps at most 35 days of history."""


@dataclass(frozen=True)
class Retention:
    """Days each kind of data is kept, counted from when it was written."""

    raw_deliveries_days: int = 7
    """Webhook-log rows and their body parts: Meta's bodies as received. Needed until their work
    is done (the lane queue keeps a message at most 4 days, and the row must still be there when
    it arrives), then only for a replay or a look at what Meta sent."""
    jobs_days: int = 30
    """Job rows and their payloads, counted from the job's deadline when that is later (a job must
    not vanish before it is due); also each tenant's queued-job count."""
    effects_days: int = 90
    """What the lanes' tasks write: stored messages, delivery statuses, comments and their triage,
    conversation turns and replies, imported rows, and anything else a task writes without an
    expiry of its own."""
    erasure_requests_days: int = 90
    """An erasure request's row (a sender hash and a status), which its confirmation code reads."""
    backup_days: int = MAX_BACKUP_DAYS
    """Point-in-time recovery's window on every table: an item deleted (by TTL or an erasure)
    can be restored from backup for this long after."""

    def __post_init__(self) -> None:
        for item in fields(self):
            value = getattr(self, item.name)
            if not isinstance(value, int) or isinstance(value, bool) or not 1 <= value <= MAX_DAYS:
                raise ValueError(f"retention {item.name} must be whole days, 1..{MAX_DAYS}, got {value!r}")
        for name in ("raw_deliveries_days", "jobs_days"):
            if getattr(self, name) < QUEUE_RETENTION_DAYS:
                raise ValueError(
                    f"retention {name} must be at least {QUEUE_RETENTION_DAYS} days, as long as a lane queue keeps "
                    "a message: a message that outlives its row is dead-lettered as row_missing"
                )
        if self.backup_days > MAX_BACKUP_DAYS:
            raise ValueError(f"retention backup_days must be 1..{MAX_BACKUP_DAYS} (point-in-time recovery)")

    def seconds(self) -> dict[str, int]:
        """What the functions are told (stacks/runtime_env.py → pipeline.settings.RetentionSettings)."""
        return {
            "raw_deliveries_seconds": self.raw_deliveries_days * DAY,
            "jobs_seconds": self.jobs_days * DAY,
            "effects_seconds": self.effects_days * DAY,
            "erasure_requests_seconds": self.erasure_requests_days * DAY,
        }


@dataclass(frozen=True)
class ErasureConfig:
    """How an erasure request runs (lambdas/pipeline/domain/erasure/requests.py)."""

    deadline_days: int = 7
    """An erasure not run this long after it was asked for is given up (and its lane's alarms have
    paged long before): past the lane's default expiry, so a paused lane delays it, not drops it."""
    max_body_bytes: int = 16 * 1024
    """Meta's callback is a form with one `signed_request` of a few hundred bytes."""
    max_request_age_seconds: int = 300
    """A `signed_request` whose `issued_at` is older is refused (403): Meta calls the moment a
    person asks, so an older one is a captured request replayed."""

    def __post_init__(self) -> None:
        if not 30 <= self.max_request_age_seconds <= 3600:
            raise ValueError(f"erasure max_request_age_seconds must be 30..3600, got {self.max_request_age_seconds}")
        if not 1 <= self.deadline_days <= 30:
            raise ValueError(
                f"erasure deadline_days must be 1..30 (Meta expects erasure within 30), got {self.deadline_days}"
            )
        if not 1024 <= self.max_body_bytes <= 1024 * 1024:
            raise ValueError("erasure max_body_bytes must be 1 KiB..1 MiB")
