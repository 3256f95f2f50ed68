"""What the doors are told: the webhook's limits, the jobs API's and the erasure callback's."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pipeline.domain.callers import Callers
from pipeline.settings.environ import EnvVar, SettingsError, section

SECRET_CACHE_SECONDS = (60, 300)
"""How long the door may keep the Meta secret: at least a minute (each read is a Secrets Manager
call per warm instance), at most five (how long a rotation takes to reach every instance)."""


@dataclass(frozen=True)
class WebhookSettings:
    """WEBHOOK_SETTINGS, for the ingress function."""

    max_body_bytes: int
    max_json_depth: int
    secret_cache_seconds: float
    secret_refresh_seconds: float
    """At most one early read of the secret per this many seconds, on a signature mismatch."""

    @classmethod
    def from_dict(cls, raw: Mapping[str, Any]) -> WebhookSettings:
        try:
            parsed = cls(
                max_body_bytes=int(raw["max_body_bytes"]),
                max_json_depth=int(raw["max_json_depth"]),
                secret_cache_seconds=float(raw["secret_cache_seconds"]),
                secret_refresh_seconds=float(raw["secret_refresh_seconds"]),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise SettingsError(f"webhook settings are incomplete or malformed: {exc!r}") from exc
        if parsed.max_body_bytes < 1 or parsed.max_json_depth < 1:
            raise SettingsError("webhook settings need max_body_bytes >= 1 and max_json_depth >= 1")
        low, high = SECRET_CACHE_SECONDS
        if not low <= parsed.secret_cache_seconds <= high:
            raise SettingsError(f"webhook settings need {low} <= secret_cache_seconds <= {high}")
        if not 1 <= parsed.secret_refresh_seconds <= parsed.secret_cache_seconds:
            raise SettingsError("webhook settings need 1 <= secret_refresh_seconds <= secret_cache_seconds")
        return parsed


def webhook(environ: Mapping[str, str]) -> WebhookSettings:
    return WebhookSettings.from_dict(section(environ, EnvVar.WEBHOOK))


@dataclass(frozen=True)
class ErasureSettings:
    """ERASURE_SETTINGS, for the erasure function (Meta's data-deletion callback)."""

    lane: str
    """The lane erasures run on; its queue URL is in LANE_QUEUES."""
    queued_limit: int
    """How many erasures may wait on it at once (the jobs' per-tenant count)."""
    deadline_seconds: float
    max_body_bytes: int
    secret_cache_seconds: float
    secret_refresh_seconds: float

    @classmethod
    def from_dict(cls, raw: Mapping[str, Any]) -> ErasureSettings:
        try:
            parsed = cls(
                lane=str(raw["lane"]),
                queued_limit=int(raw["queued_limit"]),
                deadline_seconds=float(raw["deadline_seconds"]),
                max_body_bytes=int(raw["max_body_bytes"]),
                secret_cache_seconds=float(raw["secret_cache_seconds"]),
                secret_refresh_seconds=float(raw["secret_refresh_seconds"]),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise SettingsError(f"erasure settings are incomplete or malformed: {exc!r}") from exc
        if parsed.queued_limit < 1 or parsed.deadline_seconds <= 0 or parsed.max_body_bytes < 1:
            raise SettingsError("erasure settings need queued_limit >= 1, deadline_seconds > 0, max_body_bytes >= 1")
        if not 1 <= parsed.secret_refresh_seconds <= parsed.secret_cache_seconds:
            raise SettingsError("erasure settings need 1 <= secret_refresh_seconds <= secret_cache_seconds")
        return parsed


def erasure(environ: Mapping[str, str]) -> ErasureSettings:
    return ErasureSettings.from_dict(section(environ, EnvVar.ERASURE))


@dataclass(frozen=True)
class JobsSettings:
    """JOBS_SETTINGS, for the jobs API function."""

    admission_cache_seconds: float
    tenant_queued_limit: int
    max_payload_bytes: int
    callers: Callers
    """Which tenants each IAM principal may submit and read jobs for (domain/callers.py)."""

    @classmethod
    def from_dict(cls, raw: Mapping[str, Any]) -> JobsSettings:
        try:
            parsed = cls(
                admission_cache_seconds=float(raw["admission_cache_seconds"]),
                tenant_queued_limit=int(raw["tenant_queued_limit"]),
                max_payload_bytes=int(raw["max_payload_bytes"]),
                callers=Callers.from_mapping({str(k): [str(t) for t in v] for k, v in dict(raw["callers"]).items()}),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise SettingsError(f"jobs settings are incomplete or malformed: {exc!r}") from exc
        if parsed.admission_cache_seconds < 0 or parsed.tenant_queued_limit < 1 or parsed.max_payload_bytes < 1:
            raise SettingsError(
                "jobs settings need admission_cache_seconds >= 0, tenant_queued_limit >= 1, max_payload_bytes >= 1"
            )
        return parsed


def jobs(environ: Mapping[str, str]) -> JobsSettings:
    return JobsSettings.from_dict(section(environ, EnvVar.JOBS))
