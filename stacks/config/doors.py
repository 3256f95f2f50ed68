"""The doors' part of an environment, as typed Python: the API's throttles per route, which door
Meta's webhook comes in by, the optional edge in front of the webhook, and the jobs API's
reservation beside its settings. The webhook
door's limits and secret cache, and the jobs API's callers and admission, are the functions' own
types, `WebhookSettings` and `JobsSettings` (pipeline/settings/doors.py).
`stacks/config/environments.py` puts them together per environment."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from enum import StrEnum

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


class WebhookDoorKind(StrEnum):
    HTTP_API = "http_api"
    FUNCTION_URL = "function_url"


NO_FUNCTION_URLS = frozenset(
    {
        "ap-east-2",
        "ap-south-2",
        "ap-southeast-4",
        "ap-southeast-5",
        "ap-southeast-6",
        "ap-southeast-7",
        "ca-west-1",
        "cn-northwest-1",
        "eu-central-2",
        "eu-south-2",
        "il-central-1",
        "me-central-1",
        "mx-central-1",
        "us-gov-east-1",
        "us-gov-west-1",
    }
)
"""Regions without Lambda function URLs (Lambda's guide, and cfn-lint's resource specification):
the function URL door cannot be deployed there."""

DOOR_RUN_SECONDS = 0.03
"""What one delivery keeps the door's function busy: its conditional put and its send (the
figure `lanectl plan` prices the door's Lambda time with, ops/cost/prices.py `Usage.door_seconds`)."""
DOOR_HEADROOM = 2
"""Room over the route's rate at that run time: a slower AWS call or a cold start holds an
instance longer, and past the reservation Lambda refuses the delivery (Meta retries it)."""


@dataclass(frozen=True)
class WebhookDoor:
    """Which door Meta's deliveries (`GET`/`POST` /webhooks/meta) come in by. The jobs API and Meta's
    data-deletion callback stay on the HTTP API either way.

    `HTTP_API` (the default): the webhook is a route of the HTTP API, bounded by its throttle
    (`ApiConfig.webhook`), logged in its access log, with API Gateway's 5xx count per route.

    `FUNCTION_URL`: Meta posts to the door function's own Lambda function URL, with AuthType NONE
    (Meta cannot sign requests for IAM; the function verifies Meta's X-Hub-Signature-256 over the
    raw body, as it does behind the API). It saves the HTTP API's request charge ($1.00 a million
    deliveries) and the route's detailed metrics (`lanectl plan` prices both doors; scenario 10:
    0.66x the common design, against 0.77x on the route), and API Gateway's hop in the latency.
    dev uses it; staging and prod keep the route (docs/ARCHITECTURE.md says why). It gives up:
    - per-route throttling: its bound is the function's reserved concurrency (`reservation`), which
      caps instances, not a rate; past it Lambda answers 429 and Meta retries. The reservation is
      taken whether or not the environment reserves for its lanes: without it nothing bounds the door;
    - API Gateway's access log and its 5xx count per route: Lambda's own URL counts
      (`Url5xxCount`, `UrlRequestCount` in AWS/Lambda) and the function's log lines remain;
    - the path: every path and method of the URL reaches the function (the signature still
      decides; a GET without the verify token is refused as behind the API);
    - custom domains and mutual TLS (a function URL has neither; CloudFront in front would give
      the first, not the second), and the optional edge, which fronts the HTTP API only: an
      environment may not turn on both (stacks/config/environments.py refuses it);
    - API Gateway's 10 MB payload: a function URL takes 6 MB (the door caps bodies at 3 MiB,
      `WebhookSettings.max_body_bytes`, far below either), and API Gateway's 30 s integration
      timeout no longer applies: the function's own timeout (10 s) is the only one;
    - nothing, for request validation: an HTTP API validates no body either, and the door's own
      checks (signature, cap, JSON depth) are the same behind both.
    The URL lives as long as the function: replacing the function (a new logical id) makes a new
    URL, which Meta must then be given, as a replaced API's would.
    The local runtime emulates the HTTP API only: an environment with this door cannot run
    locally, and the local environment keeps the route."""

    kind: WebhookDoorKind = WebhookDoorKind.HTTP_API
    reserved_concurrency: int | None = None
    """The function URL's bound; None: sized from the webhook route's throttle (`reservation`)."""

    def __post_init__(self) -> None:
        if self.reserved_concurrency is not None and self.reserved_concurrency < 1:
            raise ValueError(f"webhook door reserved_concurrency must be >= 1, got {self.reserved_concurrency}")

    @property
    def function_url(self) -> bool:
        return self.kind is WebhookDoorKind.FUNCTION_URL

    def reservation(self, throttle: Throttle) -> int:
        """The instances a function URL door may run at once: the route's rate it replaces, at
        `DOOR_RUN_SECONDS` a delivery, with `DOOR_HEADROOM`; 0 for the HTTP API door."""
        if not self.function_url:
            return 0
        if self.reserved_concurrency is not None:
            return self.reserved_concurrency
        return math.ceil(throttle.rate_limit * DOOR_RUN_SECONDS * DOOR_HEADROOM)


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
