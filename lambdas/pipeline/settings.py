"""What each function is told by the template, parsed once per cold start into typed values.

The stack writes these variables (see stacks/constructs/function.py); a handler builds its settings
from the mapping it is given (`os.environ` on Lambda, the template's variables in the local
runtime) and never reads the process environment anywhere else.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from pipeline.domain.callers import Callers


class EnvVar:
    ENV_NAME = "PIPELINE_ENV"
    WEBHOOK_TABLE = "WEBHOOK_TABLE"
    JOBS_TABLE = "JOBS_TABLE"
    STATE_TABLE = "STATE_TABLE"
    DATA_TABLE = "DATA_TABLE"
    LANES = "LANES"
    """JSON: {lane name: LaneSettings as a dict} for every lane (ingress, jobs, sweeper)."""
    LANE_QUEUES = "LANE_QUEUES"
    """JSON: {lane name: queue URL} for every lane."""
    LANE = "LANE"
    """JSON: the consumer's own LaneSettings."""
    QUEUE_URL = "QUEUE_URL"
    DLQ_URL = "DLQ_URL"
    DEPENDENCIES = "DEPENDENCIES"
    """JSON: {dependency name: {"limit": int, "mode": "enforce"|"observe"}}."""
    META_SECRET_ARN = "META_SECRET_ARN"  # noqa: S105 (the name of a variable holding an ARN)
    SENDER_KEY_ARN = "SENDER_KEY_ARN"
    """The secret holding the key sender hashes are made with (adapters/sender_key.py)."""
    WEBHOOK = "WEBHOOK_SETTINGS"
    JOBS = "JOBS_SETTINGS"
    SWEEPER = "SWEEPER_SETTINGS"
    ERASURE = "ERASURE_SETTINGS"
    IDEMPOTENCY_TTL_SECONDS = "IDEMPOTENCY_TTL_SECONDS"
    RETENTION = "RETENTION_SETTINGS"
    """JSON: seconds each kind of data is kept (RetentionSettings)."""
    METRICS_NAMESPACE = "POWERTOOLS_METRICS_NAMESPACE"
    SERVICE_NAME = "POWERTOOLS_SERVICE_NAME"
    REGION = "AWS_REGION"


class SettingsError(ValueError):
    """A function was deployed without a variable it needs, or with one it cannot parse."""


def _require(environ: Mapping[str, str], name: str) -> str:
    value = environ.get(name)
    if value is None or value == "":
        raise SettingsError(f"environment variable {name} is not set")
    return value


def _json(environ: Mapping[str, str], name: str) -> Any:
    raw = _require(environ, name)
    try:
        return json.loads(raw)
    except json.JSONDecodeError as exc:
        raise SettingsError(f"environment variable {name} is not valid JSON: {exc}") from exc


@dataclass(frozen=True)
class LaneSettings:
    """The part of a catalogue lane that code running in Lambda needs."""

    name: str
    task: str
    objective_seconds: float
    timeout_seconds: float
    max_receives: int
    retry_base_seconds: float
    retry_cap_seconds: float
    tenant_quota: int
    """0: the lane keeps no tenant bookkeeping."""
    tenant_quota_mode: str
    default_expiry_seconds: float | None
    defer_seconds: int
    task_time_limit_seconds: float
    max_concurrency: int
    batch_size: int
    dependency: str | None = None
    options: Mapping[str, str] = field(default_factory=dict)
    service_seconds: float = 0.0
    """The expected time one record takes: work with less time than this before its deadline is
    dropped unrun rather than started late."""

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "task": self.task,
            "objective_seconds": self.objective_seconds,
            "timeout_seconds": self.timeout_seconds,
            "max_receives": self.max_receives,
            "retry_base_seconds": self.retry_base_seconds,
            "retry_cap_seconds": self.retry_cap_seconds,
            "tenant_quota": self.tenant_quota,
            "tenant_quota_mode": self.tenant_quota_mode,
            "default_expiry_seconds": self.default_expiry_seconds,
            "defer_seconds": self.defer_seconds,
            "task_time_limit_seconds": self.task_time_limit_seconds,
            "max_concurrency": self.max_concurrency,
            "batch_size": self.batch_size,
            "dependency": self.dependency,
            "options": dict(self.options),
            "service_seconds": self.service_seconds,
        }

    @classmethod
    def from_dict(cls, raw: Mapping[str, Any]) -> LaneSettings:
        try:
            return cls(
                name=str(raw["name"]),
                task=str(raw["task"]),
                objective_seconds=float(raw["objective_seconds"]),
                timeout_seconds=float(raw["timeout_seconds"]),
                max_receives=int(raw["max_receives"]),
                retry_base_seconds=float(raw["retry_base_seconds"]),
                retry_cap_seconds=float(raw["retry_cap_seconds"]),
                tenant_quota=int(raw["tenant_quota"]),
                tenant_quota_mode=str(raw["tenant_quota_mode"]),
                default_expiry_seconds=(
                    None if raw.get("default_expiry_seconds") is None else float(raw["default_expiry_seconds"])
                ),
                defer_seconds=int(raw["defer_seconds"]),
                task_time_limit_seconds=float(raw["task_time_limit_seconds"]),
                max_concurrency=int(raw["max_concurrency"]),
                batch_size=int(raw["batch_size"]),
                dependency=raw.get("dependency") or None,
                options={str(k): str(v) for k, v in (raw.get("options") or {}).items()},
                service_seconds=float(raw.get("service_seconds") or 0.0),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise SettingsError(f"lane settings are incomplete or malformed: {exc!r}") from exc


@dataclass(frozen=True)
class DependencySettings:
    name: str
    limit: int
    mode: str


@dataclass(frozen=True)
class Tables:
    webhook_log: str
    jobs: str
    state: str
    data: str

    @classmethod
    def from_environ(cls, environ: Mapping[str, str]) -> Tables:
        return cls(
            webhook_log=_require(environ, EnvVar.WEBHOOK_TABLE),
            jobs=_require(environ, EnvVar.JOBS_TABLE),
            state=_require(environ, EnvVar.STATE_TABLE),
            data=_require(environ, EnvVar.DATA_TABLE),
        )


def region(environ: Mapping[str, str]) -> str:
    return _require(environ, EnvVar.REGION)


def lanes(environ: Mapping[str, str]) -> dict[str, LaneSettings]:
    raw = _json(environ, EnvVar.LANES)
    return {name: LaneSettings.from_dict(value) for name, value in raw.items()}


def lane(environ: Mapping[str, str]) -> LaneSettings:
    return LaneSettings.from_dict(_json(environ, EnvVar.LANE))


def lane_queues(environ: Mapping[str, str]) -> dict[str, str]:
    raw = _json(environ, EnvVar.LANE_QUEUES)
    if not isinstance(raw, dict) or not raw:
        raise SettingsError(f"{EnvVar.LANE_QUEUES} must map lane names to queue URLs")
    return {str(k): str(v) for k, v in raw.items()}


def dependencies(environ: Mapping[str, str]) -> dict[str, DependencySettings]:
    raw = _json(environ, EnvVar.DEPENDENCIES)
    return {
        name: DependencySettings(name=name, limit=int(value["limit"]), mode=str(value["mode"]))
        for name, value in raw.items()
    }


def section(environ: Mapping[str, str], name: str) -> dict[str, Any]:
    """One JSON settings block (WEBHOOK_SETTINGS, JOBS_SETTINGS, SWEEPER_SETTINGS, ...)."""
    raw = _json(environ, name)
    if not isinstance(raw, dict):
        raise SettingsError(f"{name} must be a JSON object")
    return raw


def require(environ: Mapping[str, str], name: str) -> str:
    return _require(environ, name)


@dataclass(frozen=True)
class SweeperSettings:
    """SWEEPER_SETTINGS: how long a row may sit before the sweeper calls it lost, and how often it
    may be replayed before it is abandoned (see domain/sweep.py for the rule)."""

    grace_seconds: float
    patience_seconds: float
    """While its lane is busy, a row is left alone this long after its latest send."""
    max_replays: int
    rows_per_run: int
    patience_cap_seconds: float
    """Past patience, a busy lane's row is left alone until the lane drains past it, or this long."""

    @classmethod
    def from_dict(cls, raw: Mapping[str, Any]) -> SweeperSettings:
        try:
            parsed = cls(
                grace_seconds=float(raw["grace_seconds"]),
                patience_seconds=float(raw["patience_seconds"]),
                max_replays=int(raw["max_replays"]),
                rows_per_run=int(raw["rows_per_run"]),
                patience_cap_seconds=float(raw["patience_cap_seconds"]),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise SettingsError(f"sweeper settings are incomplete or malformed: {exc!r}") from exc
        if parsed.grace_seconds <= 0 or parsed.patience_seconds < parsed.grace_seconds:
            raise SettingsError("sweeper settings need 0 < grace_seconds <= patience_seconds")
        # A cap below patience is not refused, only never reached (see sweep.patience_for): a
        # sweeper switched off by a grace period beyond any run raises patience with it.
        if parsed.patience_cap_seconds <= 0:
            raise SettingsError("sweeper settings need patience_cap_seconds > 0")
        if parsed.max_replays < 1 or parsed.rows_per_run < 1:
            raise SettingsError("sweeper settings need max_replays >= 1 and rows_per_run >= 1")
        return parsed


def sweeper(environ: Mapping[str, str]) -> SweeperSettings:
    return SweeperSettings.from_dict(section(environ, EnvVar.SWEEPER))


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


@dataclass(frozen=True)
class ConsumerSettings:
    """Everything a lane consumer is deployed with (see stacks/runtime_env.consumer)."""

    lane: LaneSettings
    queue_url: str
    dlq_url: str
    dependencies: Mapping[str, DependencySettings]
    idempotency_ttl_seconds: int
    tables: Tables
    region: str
    retention: RetentionSettings

    @property
    def dependency(self) -> DependencySettings | None:
        """The shared budget this lane's task holds around its external calls, if any."""
        if self.lane.dependency is None:
            return None
        try:
            return self.dependencies[self.lane.dependency]
        except KeyError:
            raise SettingsError(
                f"lane {self.lane.name!r} uses dependency {self.lane.dependency!r}, "
                f"which {EnvVar.DEPENDENCIES} does not define"
            ) from None

    @classmethod
    def from_environ(cls, environ: Mapping[str, str]) -> ConsumerSettings:
        raw_ttl = _require(environ, EnvVar.IDEMPOTENCY_TTL_SECONDS)
        try:
            ttl = int(raw_ttl)
        except ValueError:
            raise SettingsError(f"{EnvVar.IDEMPOTENCY_TTL_SECONDS} must be whole seconds, got {raw_ttl!r}") from None
        parsed = cls(
            lane=lane(environ),
            queue_url=_require(environ, EnvVar.QUEUE_URL),
            dlq_url=_require(environ, EnvVar.DLQ_URL),
            dependencies=dependencies(environ),
            idempotency_ttl_seconds=ttl,
            tables=Tables.from_environ(environ),
            region=region(environ),
            retention=retention(environ),
        )
        _ = parsed.dependency  # a lane naming an undefined dependency fails the cold start, loudly
        return parsed


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
    lane_capacity_per_second: Mapping[str, float]
    """Each lane's configured drain rate (max concurrency / service time): admission's estimate
    until consumers have measured one."""
    callers: Callers
    """Which tenants each IAM principal may submit and read jobs for (domain/callers.py)."""

    @classmethod
    def from_dict(cls, raw: Mapping[str, Any]) -> JobsSettings:
        try:
            parsed = cls(
                admission_cache_seconds=float(raw["admission_cache_seconds"]),
                tenant_queued_limit=int(raw["tenant_queued_limit"]),
                max_payload_bytes=int(raw["max_payload_bytes"]),
                lane_capacity_per_second={str(k): float(v) for k, v in dict(raw["lane_capacity_per_second"]).items()},
                callers=Callers.from_mapping({str(k): [str(t) for t in v] for k, v in dict(raw["callers"]).items()}),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise SettingsError(f"jobs settings are incomplete or malformed: {exc!r}") from exc
        if parsed.admission_cache_seconds < 0 or parsed.tenant_queued_limit < 1 or parsed.max_payload_bytes < 1:
            raise SettingsError(
                "jobs settings need admission_cache_seconds >= 0, tenant_queued_limit >= 1, max_payload_bytes >= 1"
            )
        if any(rate <= 0 for rate in parsed.lane_capacity_per_second.values()):
            raise SettingsError("jobs settings need every lane_capacity_per_second > 0")
        return parsed


def jobs(environ: Mapping[str, str]) -> JobsSettings:
    return JobsSettings.from_dict(section(environ, EnvVar.JOBS))
