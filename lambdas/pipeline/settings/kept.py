"""How long data is kept, and the sweeper's policy, as the functions are given them."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pipeline.policy.sweeper import SweeperSettings
from pipeline.settings.environ import EnvVar, SettingsError, policy, section


def sweeper(environ: Mapping[str, str]) -> SweeperSettings:
    return policy(environ, EnvVar.SWEEPER, SweeperSettings)


@dataclass(frozen=True)
class RetentionSettings:
    """RETENTION_SETTINGS: seconds each kind of data is kept before DynamoDB's TTL deletes it
    (stacks/config/privacy.Retention). Every function that writes an item stamps its expiry."""

    raw_deliveries_seconds: int
    jobs_seconds: int
    effects_seconds: int
    erasure_requests_seconds: int

    @classmethod
    def from_dict(cls, raw: Mapping[str, Any]) -> RetentionSettings:
        try:
            parsed = cls(
                raw_deliveries_seconds=int(raw["raw_deliveries_seconds"]),
                jobs_seconds=int(raw["jobs_seconds"]),
                effects_seconds=int(raw["effects_seconds"]),
                erasure_requests_seconds=int(raw["erasure_requests_seconds"]),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise SettingsError(f"retention settings are incomplete or malformed: {exc!r}") from exc
        if min(vars(parsed).values()) < 1:
            raise SettingsError("retention settings need every period >= 1 second")
        return parsed


def retention(environ: Mapping[str, str]) -> RetentionSettings:
    return RetentionSettings.from_dict(section(environ, EnvVar.RETENTION))
