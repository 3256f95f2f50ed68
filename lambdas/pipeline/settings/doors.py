"""What the doors are told: the webhook's limits, the jobs API's and the erasure callback's.

Each is written by the stack and read back here with the policy codec (pipeline/policy/codec.py),
so an unknown, missing or mistyped key fails naming the variable and the field; the checks below
run on reading too.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property

from pipeline.policy.callers import Callers
from pipeline.settings.environ import EnvVar, policy

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
    client_subject: str | None = None
    """The common name a client certificate must carry (mutual TLS on); None: none is asked for."""

    def __post_init__(self) -> None:
        if self.client_subject is not None and not self.client_subject.strip():
            raise ValueError("webhook settings' client_subject is empty: leave it out when mutual TLS is off")
        if self.max_body_bytes < 1 or self.max_json_depth < 1:
            raise ValueError("webhook settings need max_body_bytes >= 1 and max_json_depth >= 1")
        low, high = SECRET_CACHE_SECONDS
        if not low <= self.secret_cache_seconds <= high:
            raise ValueError(f"webhook settings need {low} <= secret_cache_seconds <= {high}")
        if not 1 <= self.secret_refresh_seconds <= self.secret_cache_seconds:
            raise ValueError("webhook settings need 1 <= secret_refresh_seconds <= secret_cache_seconds")


def webhook(environ: Mapping[str, str]) -> WebhookSettings:
    return policy(environ, EnvVar.WEBHOOK, WebhookSettings)


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
    max_request_age_seconds: float = 300.0
    """A signed_request issued longer ago is refused as a replay."""

    def __post_init__(self) -> None:
        if self.queued_limit < 1 or self.deadline_seconds <= 0 or self.max_body_bytes < 1:
            raise ValueError("erasure settings need queued_limit >= 1, deadline_seconds > 0, max_body_bytes >= 1")
        if self.max_request_age_seconds <= 0:
            raise ValueError("erasure settings need max_request_age_seconds > 0")
        if not 1 <= self.secret_refresh_seconds <= self.secret_cache_seconds:
            raise ValueError("erasure settings need 1 <= secret_refresh_seconds <= secret_cache_seconds")


def erasure(environ: Mapping[str, str]) -> ErasureSettings:
    return policy(environ, EnvVar.ERASURE, ErasureSettings)


@dataclass(frozen=True)
class JobsSettings:
    """JOBS_SETTINGS, for the jobs API function."""

    admission_cache_seconds: float
    tenant_queued_limit: int
    max_payload_bytes: int
    callers: dict[str, tuple[str, ...]]
    """Which tenants each IAM principal (by ARN) may submit and read jobs for, as the environment's
    config grants them (`JobsConfig.callers`); `grants` is how the rules match them."""

    def __post_init__(self) -> None:
        if self.admission_cache_seconds < 0 or self.tenant_queued_limit < 1 or self.max_payload_bytes < 1:
            raise ValueError(
                "jobs settings need admission_cache_seconds >= 0, tenant_queued_limit >= 1, max_payload_bytes >= 1"
            )
        _ = self.grants  # a principal or tenant the rules cannot match fails the cold start, naming it

    @cached_property
    def grants(self) -> Callers:
        """The callers by grant key (policy/callers.py)."""
        return Callers.from_mapping(self.callers)


def jobs(environ: Mapping[str, str]) -> JobsSettings:
    return policy(environ, EnvVar.JOBS, JobsSettings)
