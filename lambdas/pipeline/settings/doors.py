"""What the doors are told: the webhook's limits, the jobs API's and the erasure callback's.

Each is written by the stack and read back here with the policy codec (pipeline/settings/codec.py),
so an unknown, missing or mistyped key fails naming the variable and the field; the checks below
run on reading too.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

from pipeline.settings.callers import Callers

MIB = 1024 * 1024
MAX_LOGGABLE_BYTES = 3_800_000
"""A transaction writes at most 4 MB in all: the largest body the webhook log can always hold
(domain/webhook/body.py stores it in parts). No body cap may be larger: the door would accept a
delivery it cannot keep."""
SECRET_CACHE_SECONDS = (60, 300)
"""How long the door may keep the Meta secret: at least a minute (each read is a Secrets Manager
call per warm instance), at most five (how long a rotation takes to reach every instance)."""


@dataclass(frozen=True)
class WebhookSettings:
    """The webhook door's limits: an environment's (stacks/config/environments.py), written as
    WEBHOOK_SETTINGS for the ingress function and read back into this same type."""

    max_body_bytes: int = 3 * MIB
    """Meta's largest delivery."""
    max_json_depth: int = 64
    secret_cache_seconds: float = 120
    """How long a warm door keeps the Meta secret: the longest a rotation takes to reach it when
    no delivery signed with the new secret has arrived there yet (one that has triggers an early
    read, below). Each read is a Secrets Manager call per warm instance."""
    secret_refresh_seconds: float = 30
    """A delivery whose signature does not match may trigger one early read of the secret, at most
    once per this many seconds per instance: how fast a new secret is seen, and all a flood of
    forged signatures can cost in Secrets Manager calls."""
    client_subject: str | None = None
    """The common name a client certificate must carry (mutual TLS on, stacks/config/mutual_tls.py);
    None: none is asked for. The stack sets it from the environment's mutual TLS."""

    def __post_init__(self) -> None:
        if self.client_subject is not None and not self.client_subject.strip():
            raise ValueError("webhook settings' client_subject is empty: leave it out when mutual TLS is off")
        if not 1 <= self.max_body_bytes <= MAX_LOGGABLE_BYTES:
            raise ValueError(f"webhook max_body_bytes must be 1..{MAX_LOGGABLE_BYTES}, got {self.max_body_bytes}")
        if self.max_json_depth < 1:
            raise ValueError("webhook max_json_depth must be >= 1")
        low, high = SECRET_CACHE_SECONDS
        if not low <= self.secret_cache_seconds <= high:
            raise ValueError(f"webhook secret_cache_seconds must be {low}..{high}, got {self.secret_cache_seconds}")
        if not 1 <= self.secret_refresh_seconds <= self.secret_cache_seconds:
            raise ValueError("webhook secret_refresh_seconds must be 1..secret_cache_seconds")


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


@dataclass(frozen=True)
class JobsSettings:
    """JOBS_SETTINGS, for the jobs API function: an environment's (`JobsConfig.settings` in
    stacks/config/environments.py), written as it is and read back into this same type."""

    admission_cache_seconds: float = 1.0
    tenant_queued_limit: int = 1000
    max_payload_bytes: int = 64 * 1024
    callers: dict[str, tuple[str, ...]] = field(default_factory=dict)
    """Which tenants each IAM principal (by ARN) may submit and read jobs for: principal to
    tenant ids, or (ALL_TENANTS,) (settings/callers.py). A caller with no grant is refused 403 on
    every route; empty means the API refuses everyone until the producers' roles are written here
    (`lanectl preflight` fails on it). `grants` is how the rules match them."""

    def __post_init__(self) -> None:
        if self.admission_cache_seconds < 0 or self.tenant_queued_limit < 1 or self.max_payload_bytes < 1:
            raise ValueError(
                "jobs settings need admission_cache_seconds >= 0, tenant_queued_limit >= 1, max_payload_bytes >= 1"
            )
        _ = self.grants  # a principal or tenant the rules cannot match fails synth and the cold start, naming it

    @cached_property
    def grants(self) -> Callers:
        """The callers by grant key (settings/callers.py)."""
        return Callers.from_mapping(self.callers)
