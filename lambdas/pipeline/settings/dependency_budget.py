"""A shared dependency's budget: one type from the environment's config to the consumer's cold start.

The stack's environments list them (stacks/config/environments.py), the planner checks each limit
against `vendor_quota`, and every consumer is given all of them by name in DEPENDENCIES, read back
into this same type (pipeline/settings/lane_settings.py).
"""

from __future__ import annotations

from dataclasses import dataclass

from pipeline.settings.budget_mode import Mode


@dataclass(frozen=True)
class DependencyBudget:
    """A downstream shared by more than one lane (the model vendor, say). `limit` concurrent calls
    across all its lanes, held as expiring leases; `vendor_quota` is what the vendor grants us and
    what the planner checks the limit against."""

    name: str
    limit: int
    vendor_quota: int
    mode: Mode = Mode.ENFORCE
    requests_per_minute: int | None = None
    """Calls a minute across its lanes (Bedrock's requests-per-minute quota for the model), counted
    in slices of the minute (lambdas/pipeline/domain/dependencies/rates.py); None: bounded only at once."""

    def __post_init__(self) -> None:
        if self.limit < 1:
            raise ValueError(f"dependency {self.name!r}: limit must be >= 1")
        if self.requests_per_minute is not None and self.requests_per_minute < 3:
            raise ValueError(f"dependency {self.name!r}: requests_per_minute must be >= 3, or None")
