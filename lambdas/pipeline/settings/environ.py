"""The variables the stack gives each function, and how one is read: required, JSON, or a policy."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from pipeline.settings import codec

T = TypeVar("T")


class EnvVar:
    ENV_NAME = "PIPELINE_ENV"
    WEBHOOK_TABLE = "WEBHOOK_TABLE"
    JOBS_TABLE = "JOBS_TABLE"
    STATE_TABLE = "STATE_TABLE"
    DATA_TABLE = "DATA_TABLE"
    LANES = "LANES"
    """JSON: {lane name: LaneCapacity} for every lane (the jobs API)."""
    LANE_OBJECTIVES = "LANE_OBJECTIVES"
    """JSON: {lane name: objective seconds} for every lane (the sweeper)."""
    LANE_QUEUES = "LANE_QUEUES"
    """JSON: {lane name: queue URL} for every lane."""
    LANE = "LANE"
    """JSON: the consumer's own LanePolicy."""
    QUEUE_URL = "QUEUE_URL"
    DLQ_URL = "DLQ_URL"
    DEPENDENCIES = "DEPENDENCIES"
    """JSON: {dependency name: {"limit": int, "mode": "enforce"|"observe", "requests_per_minute": int|null}}."""
    META_SECRET_ARN = "META_SECRET_ARN"  # noqa: S105 (the name of a variable holding an ARN)
    SENDER_KEY_ARN = "SENDER_KEY_ARN"
    """The secret holding the key sender hashes are made with (adapters/sender_key.py)."""
    WEBHOOK = "WEBHOOK_SETTINGS"
    JOBS = "JOBS_SETTINGS"
    """JSON: the jobs API's JobsSettings, without its callers (JOBS_CALLERS_ARN holds them)."""
    JOBS_CALLERS_ARN = "JOBS_CALLERS_ARN"
    """The secret holding the jobs API's callers, {principal: [tenant, ...]}: 200 callers take about
    12 KB, three times what Lambda allows a whole environment."""
    JOBS_CALLERS_DIGEST = "JOBS_CALLERS_DIGEST"
    """A digest of those callers: a change to them changes the function's configuration, so Lambda
    replaces the warm instances that read the old ones at their cold start."""
    SWEEPER = "SWEEPER_SETTINGS"
    ACCOUNTS_TABLE = "ACCOUNTS_TABLE"
    """Source accounts' last-seen items; set with ACCOUNT_SILENCE."""
    ACCOUNT_SILENCE = "ACCOUNT_SILENCE"
    """JSON: when a source account that normally sends is quiet too long (AccountSilence); absent
    where the environment does not watch accounts (the door notes none, the sweeper checks none)."""
    ERASURE = "ERASURE_SETTINGS"
    PROBE = "PROBE_SETTINGS"
    """JSON: the lane probe's ProbeSettings (pipeline/settings/lane_probe.py)."""
    IDEMPOTENCY_TTL_SECONDS = "IDEMPOTENCY_TTL_SECONDS"
    GRAPH_API_URL = "GRAPH_API_URL"
    """Meta's Graph API with its version (`https://graph.facebook.com/v21.0`): where replies are sent."""
    ACCESS_TOKEN_ARN = "META_ACCESS_TOKEN_ARN"  # noqa: S105 (the name of a variable holding an ARN)
    """The secret holding the access token replies are sent with (`{"access_token": "..."}`)."""
    CALLBACK_KEY_ARN = "REPLY_CALLBACK_KEY_ARN"
    """The secret holding the key replies' references are signed with (adapters/callback_key.py):
    on the lanes that send replies (ai) and those whose statuses resolve them (messages)."""
    SEND_PER_SECOND = "META_MESSAGES_PER_SECOND"
    """Meta's messages a second per business phone number (domain/dependencies/rates.py), on sending lanes."""
    TENANT_ASSETS = "TENANT_ASSETS"
    """Which Meta assets each tenant owns (AssetBinding.to_text, settings/tenant_assets.py), for the
    jobs API and the lanes that send; absent or empty binds nothing, so no reply is sent."""
    AUTO_REPLY = "AUTO_REPLY"
    """JSON: AutoReplySettings (settings/auto_reply.py), on the messages lane where a tenant has it
    on; absent everywhere else, so nothing is answered without a product asking."""
    MODEL = "MODEL_SETTINGS"
    """JSON: the lane's model (ModelSettings); absent on lanes whose task calls none."""
    RETENTION = "RETENTION_SETTINGS"
    """JSON: seconds each kind of data is kept (RetentionSettings)."""
    METRICS_NAMESPACE = "POWERTOOLS_METRICS_NAMESPACE"
    SERVICE_NAME = "POWERTOOLS_SERVICE_NAME"
    REGION = "AWS_REGION"
    ACCESS_KEY_ID = "AWS_ACCESS_KEY_ID"
    SECRET_ACCESS_KEY = "AWS_SECRET_ACCESS_KEY"  # noqa: S105 (the variable's name)
    SESSION_TOKEN = "AWS_SESSION_TOKEN"  # noqa: S105 (the variable's name)


class SettingsError(ValueError):
    """A function was deployed without a variable it needs, or with one it cannot parse."""


def require(environ: Mapping[str, str], name: str) -> str:
    value = environ.get(name)
    if value is None or value == "":
        raise SettingsError(f"environment variable {name} is not set")
    return value


def json_value(environ: Mapping[str, str], name: str) -> Any:
    raw = require(environ, name)
    try:
        return json.loads(raw)
    except json.JSONDecodeError as exc:
        raise SettingsError(f"environment variable {name} is not valid JSON: {exc}") from exc


def section(environ: Mapping[str, str], name: str) -> dict[str, Any]:
    """One JSON settings block (WEBHOOK_SETTINGS, JOBS_SETTINGS, SWEEPER_SETTINGS, ...)."""
    raw = json_value(environ, name)
    if not isinstance(raw, dict):
        raise SettingsError(f"{name} must be a JSON object")
    return raw


def policy(environ: Mapping[str, str], name: str, cls: type[T]) -> T:
    """The variable `name`, read as the policy type `cls` (pipeline/settings/codec.py)."""
    try:
        return codec.from_plain(cls, json_value(environ, name))
    except codec.PolicyError as exc:
        raise SettingsError(f"{name}: {exc}") from exc


def policies(environ: Mapping[str, str], name: str, cls: type[T]) -> dict[str, T]:
    """The variable `name`, a JSON object of policies of type `cls` by name."""
    raw = section(environ, name)
    try:
        return {str(key): codec.from_plain(cls, value) for key, value in raw.items()}
    except codec.PolicyError as exc:
        raise SettingsError(f"{name}: {exc}") from exc


def region(environ: Mapping[str, str]) -> str:
    return require(environ, EnvVar.REGION)


@dataclass(frozen=True)
class Credentials:
    """The execution role's session, as Lambda gives it to the function in its variables."""

    access_key_id: str
    secret_access_key: str
    session_token: str | None


def credentials(environ: Mapping[str, str]) -> Credentials | None:
    """The role's credentials from the function's variables; None where they are not given there
    (boto3's own chain then finds them, as it would on Lambda). Read from the mapping the handler
    was built with, so each function the local runtime hosts in one process acts as its own role."""
    key = environ.get(EnvVar.ACCESS_KEY_ID)
    secret = environ.get(EnvVar.SECRET_ACCESS_KEY)
    if not key and not secret:
        return None
    if not key or not secret:
        raise SettingsError(f"{EnvVar.ACCESS_KEY_ID} and {EnvVar.SECRET_ACCESS_KEY} must be set together")
    return Credentials(key, secret, environ.get(EnvVar.SESSION_TOKEN) or None)


def lane_queues(environ: Mapping[str, str]) -> dict[str, str]:
    raw = json_value(environ, EnvVar.LANE_QUEUES)
    if not isinstance(raw, dict) or not raw:
        raise SettingsError(f"{EnvVar.LANE_QUEUES} must map lane names to queue URLs")
    return {str(k): str(v) for k, v in raw.items()}


@dataclass(frozen=True)
class Tables:
    webhook_log: str
    jobs: str
    state: str
    data: str

    @classmethod
    def from_environ(cls, environ: Mapping[str, str]) -> Tables:
        return cls(
            webhook_log=require(environ, EnvVar.WEBHOOK_TABLE),
            jobs=require(environ, EnvVar.JOBS_TABLE),
            state=require(environ, EnvVar.STATE_TABLE),
            data=require(environ, EnvVar.DATA_TABLE),
        )
