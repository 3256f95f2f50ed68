"""How long data is kept, and the sweeper's policy, as the functions are given them (both read
with the policy codec, pipeline/policy/codec.py)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields

from pipeline.policy.account_silence import AccountSilence
from pipeline.policy.sweeper import SweeperSettings
from pipeline.settings.environ import EnvVar, policy


def sweeper(environ: Mapping[str, str]) -> SweeperSettings:
    return policy(environ, EnvVar.SWEEPER, SweeperSettings)


def account_silence(environ: Mapping[str, str]) -> AccountSilence | None:
    """The account-silence policy, or None where the environment watches no accounts."""
    if not environ.get(EnvVar.ACCOUNT_SILENCE):
        return None
    return policy(environ, EnvVar.ACCOUNT_SILENCE, AccountSilence)


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


def retention(environ: Mapping[str, str]) -> RetentionSettings:
    return policy(environ, EnvVar.RETENTION, RetentionSettings)
