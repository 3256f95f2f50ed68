"""The doors' part of an environment, as typed Python: the API's throttles per route, the optional
edge in front of the webhook, and the jobs API's reservation beside its settings. The webhook
door's limits and secret cache, and the jobs API's callers and admission, are the functions' own
types, `WebhookSettings` and `JobsSettings` (pipeline/settings/doors.py).
`stacks/config/environments.py` puts them together per environment."""

from __future__ import annotations

from dataclasses import dataclass, field

from pipeline.settings.doors import JobsSettings


@dataclass(frozen=True)
class Throttle:
    """One API Gateway token bucket: requests a second, and how many may come at once."""

    rate_limit: float
    burst_limit: int

    def __post_init__(self) -> None:
        if self.rate_limit <= 0 or self.burst_limit < 1:
            raise ValueError(f"a throttle needs rate_limit > 0 and burst_limit >= 1, got {self}")


@dataclass(frozen=True)
class ApiConfig:
    """Throttles per route: each route is its own bucket, so a flood on one cannot spend another's.
    Past a route's bucket API Gateway answers 429 before any function runs.

    The webhook's is set high: Meta disables subscriptions that keep failing, so the webhook is
    never shed by the application; only this bound applies to it."""

    webhook: Throttle
    """POST /webhooks/meta: Meta's deliveries (and anyone posting forgeries)."""
    jobs: Throttle
    """POST /jobs and GET /jobs/{id}, each."""
    erasure: Throttle = field(default_factory=lambda: Throttle(rate_limit=5, burst_limit=20))
    """POST /meta/data-deletion (Meta's callback, a handful a day) and GET /meta/data-deletion/{code}
    (a person checking their erasure), each."""
    other: Throttle = field(default_factory=lambda: Throttle(rate_limit=10, burst_limit=20))
    """The stage's default: the subscription handshake (GET /webhooks/meta, a few calls when Meta
    verifies the subscription) and any route added without a throttle of its own."""


WEBHOOK_PATH = "/webhooks/meta"
WEBHOOK_ROUTE = f"POST {WEBHOOK_PATH}"
"""Meta's deliveries: the route key the stage throttles (and the local runtime can re-throttle)."""

EDGE_REGION = "us-east-1"
"""AWS WAF protects CloudFront only with a web ACL made in this region."""


@dataclass(frozen=True)
class EdgeConfig:
    """An optional CloudFront distribution in front of the webhook route, with an AWS WAF web ACL
    that blocks a source address past `requests_per_ip` in `window_seconds` and anything but the
    webhook's path (see stacks/constructs/edge.py). Off unless asked for: it costs a fixed monthly
    sum and a little per request (`lanectl plan`), and it only helps once Meta is pointed at it."""

    enabled: bool = False
    requests_per_ip: int = 30_000
    """Per source address and window (30 000 in 5 minutes: 100 a second). Meta sends from a pool of
    addresses it does not publish as a list, so this must stay above what any one of them sends
    at peak; the rule's CloudWatch metric and WAF's sampled requests show it. A single source
    past it is blocked at CloudFront, leaving the route's throttle to Meta."""
    window_seconds: int = 300

    def __post_init__(self) -> None:
        if self.window_seconds not in (60, 120, 300, 600):
            raise ValueError(f"edge window_seconds must be 60, 120, 300 or 600 (AWS WAF), got {self.window_seconds}")
        if not 10 <= self.requests_per_ip <= 2_000_000_000:
            raise ValueError(f"edge requests_per_ip must be 10..2e9 (AWS WAF), got {self.requests_per_ip}")


@dataclass(frozen=True)
class JobsConfig:
    """The jobs API as the stack deploys it: the function's own settings, given to it as they are
    (callers, admission, payload cap: pipeline/settings/doors.py), and what only the template and
    the planner need."""

    settings: JobsSettings = field(default_factory=JobsSettings)
    reserved_concurrency: int = 0
    """The jobs function's reservation, where the environment reserves: a webhook flood scales
    the door's function, and without a reservation it could take the account's unreserved
    concurrency the jobs API needs. It is also the jobs function's ceiling, so it must cover
    both jobs routes at their throttle (`lanectl plan` warns when it does not)."""

    def __post_init__(self) -> None:
        if self.reserved_concurrency < 0:
            raise ValueError("jobs reserved_concurrency must be >= 0")
