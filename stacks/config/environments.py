"""Deployment environments as typed Python: one value per environment, nothing read from the
process. `app.py` picks one by name; everything else receives the `Environment` it was given."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from pipeline.domain import callers
from pipeline.domain.callers import ALL_TENANTS
from pipeline.domain.webhook_body import MAX_LOGGABLE_BYTES
from pipeline.settings import SECRET_CACHE_SECONDS
from stacks.config.lanes import (
    AI,
    BULK,
    ENGAGEMENT,
    LLM_DEPENDENCY,
    MESSAGES,
    SCHEDULED,
    BudgetMode,
    Lane,
    RetryPolicy,
    Tick,
    Traffic,
    catalogue,
)

MIB = 1024 * 1024
LOCAL_ACCOUNT = "123456789012"
"""The account the local runtime deploys into (moto's default)."""
LOCAL_PRODUCER = "producer"
"""The role the local runtime's jobs API client acts as unless told otherwise."""


@dataclass(frozen=True)
class Dependency:
    """A downstream shared by more than one lane (the model vendor, say). `limit` concurrent calls
    across all its lanes, held as expiring leases; `vendor_quota` is what the vendor grants us and
    what the planner checks the limit against."""

    name: str
    limit: int
    vendor_quota: int
    mode: BudgetMode = BudgetMode.ENFORCE

    def __post_init__(self) -> None:
        if self.limit < 1:
            raise ValueError(f"dependency {self.name!r}: limit must be >= 1")


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
    other: Throttle = field(default_factory=lambda: Throttle(rate_limit=10, burst_limit=20))
    """The stage's default: the subscription handshake (GET /webhooks/meta, a few calls when Meta
    verifies the subscription) and any route added without a throttle of its own."""


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
class WebhookConfig:
    max_body_bytes: int = 3 * MIB
    """Meta's largest delivery."""
    max_json_depth: int = 64
    secret_cache_seconds: int = 120
    """How long a warm door keeps the Meta secret: the longest a rotation takes to reach it when
    no delivery signed with the new secret has arrived there yet (one that has triggers an early
    read, below). Each read is a Secrets Manager call per warm instance."""
    secret_refresh_seconds: int = 30
    """A delivery whose signature does not match may trigger one early read of the secret, at most
    once per this many seconds per instance: how fast a new secret is seen, and all a flood of
    forged signatures can cost in Secrets Manager calls."""

    def __post_init__(self) -> None:
        # Larger than one DynamoDB transaction can log: the door would accept a delivery it cannot keep.
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
class CallerGrant:
    """An IAM principal of the jobs API and the tenants it may submit and read jobs for. The
    principal is a role (`arn:aws:iam::<account>:role/<name>`: any session of it), a user, or an
    account's root (every principal of that account); tenants are ids or ALL_TENANTS."""

    principal: str
    tenants: tuple[str, ...]

    def __post_init__(self) -> None:
        callers.grant_key(self.principal)
        callers.check_tenants(self.tenants)


@dataclass(frozen=True)
class JobsConfig:
    admission_cache_seconds: float = 1.0
    tenant_queued_limit: int = 1000
    max_payload_bytes: int = 64 * 1024
    callers: tuple[CallerGrant, ...] = ()
    """Who may call the jobs API for which tenants. A caller with no grant is refused 403 on
    every route; empty means the API refuses everyone until the producers' roles are written
    here (`lanectl preflight` fails on it)."""
    reserved_concurrency: int = 0
    """The jobs function's reservation, where the environment reserves: a webhook flood scales
    the door's function, and without a reservation it could take the account's unreserved
    concurrency the jobs API needs. It is also the jobs function's ceiling, so it must cover
    both jobs routes at their throttle (`lanectl plan` warns when it does not)."""

    def __post_init__(self) -> None:
        callers.Callers.from_mapping({grant.principal: grant.tenants for grant in self.callers})
        if self.reserved_concurrency < 0:
            raise ValueError("jobs reserved_concurrency must be >= 0")


@dataclass(frozen=True)
class SweeperConfig:
    period_seconds: int = 120
    grace_seconds: int = 120
    """Rows younger than this are never considered lost."""
    patience_seconds: int = 15 * 60
    """While its lane has a backlog, a row younger than this is late, not lost."""
    max_replays: int = 3
    rows_per_run: int = 200
    patience_cap_seconds: int = 60 * 60
    """Past patience a busy lane's row stays late until the lane has drained past it, but no longer
    than this: the bound for a lane that stalls or cannot be read. An hour is as far back as the
    drain counts that show a lane draining are kept (domain/admission.py)."""


@dataclass(frozen=True)
class AlarmConfig:
    period_seconds: int = 60
    evaluation_periods: int = 2
    webhook_age_seconds: int = 300
    """Oldest unprocessed webhook-log row; missing data counts as breaching."""
    errors_threshold: int = 5
    jobs_shed_threshold: int = 100
    """Shedding is the design working; page only when a lane sheds this many jobs in a period."""
    rejected_signatures: int = 20
    """Refused signatures (missing, malformed or wrong) per period, for `evaluation_periods` in a
    row. Meta signs everything it sends, so a steady stream is either someone else posting or a
    secret that does not match Meta's (a rotation gone wrong)."""


@dataclass(frozen=True)
class Environment:
    name: str
    lanes: tuple[Lane, ...]
    dependencies: tuple[Dependency, ...]
    api: ApiConfig
    reserved_concurrency: bool
    """Reservations fail the deploy on accounts with a small concurrency quota (new accounts
    start at 10 and Lambda keeps 100 unreserved), so they are on only where the quota allows."""
    account_concurrency_quota: int
    log_retention_days: int
    retain_stateful: bool
    termination_protection: bool
    account: str | None = None
    region: str | None = None
    webhook: WebhookConfig = field(default_factory=WebhookConfig)
    jobs: JobsConfig = field(default_factory=JobsConfig)
    sweeper: SweeperConfig = field(default_factory=SweeperConfig)
    alarms: AlarmConfig = field(default_factory=AlarmConfig)
    edge: EdgeConfig = field(default_factory=EdgeConfig)
    idempotency_ttl_seconds: int = 7 * 24 * 3600
    alarm_emails: tuple[str, ...] = ()
    powertools_version: str = "3.37.0"

    def __post_init__(self) -> None:
        names = [lane.name for lane in self.lanes]
        if len(set(names)) != len(names):
            raise ValueError(f"{self.name}: duplicate lane names in {names}")
        if self.edge.enabled and self.region not in (None, EDGE_REGION):
            raise ValueError(
                f"{self.name}: the edge needs the stack in {EDGE_REGION} (AWS WAF for CloudFront exists only "
                f"there), and this environment is pinned to {self.region}"
            )
        known = {d.name for d in self.dependencies}
        for lane in self.lanes:
            if lane.dependency and lane.dependency not in known:
                raise ValueError(f"{self.name}: lane {lane.name!r} uses unknown dependency {lane.dependency!r}")

    def lane(self, name: str) -> Lane:
        for lane in self.lanes:
            if lane.name == name:
                return lane
        raise KeyError(f"no lane {name!r} in {self.name}; lanes: {', '.join(self.lane_names)}")

    def dependency(self, name: str) -> Dependency:
        for dependency in self.dependencies:
            if dependency.name == name:
                return dependency
        raise KeyError(f"no dependency {name!r} in {self.name}")

    @property
    def lane_names(self) -> tuple[str, ...]:
        return tuple(lane.name for lane in self.lanes)

    @property
    def reserved_total(self) -> int:
        """What the lanes' consumers reserve."""
        return sum(lane.reserved_concurrency for lane in self.lanes) if self.reserved_concurrency else 0

    @property
    def jobs_reservation(self) -> int:
        return self.jobs.reserved_concurrency if self.reserved_concurrency else 0


def _scaled(lanes: tuple[Lane, ...], scale: float) -> tuple[Lane, ...]:
    """Smaller environments keep the same lanes, sized for a fraction of production's traffic."""
    scaled = []
    for lane in lanes:
        concurrency = max(2, round(lane.max_concurrency * scale))
        traffic = replace(lane.traffic, peak_per_second=lane.traffic.peak_per_second * scale)
        scaled.append(replace(lane, max_concurrency=concurrency, reserved_concurrency=concurrency, traffic=traffic))
    return tuple(scaled)


# The local environment runs on one machine against an in-process emulator, so its times are
# seconds, not minutes, and its queues are kept shallow (the emulator scans every message per
# receive). Same lanes, same rules, shorter clocks.
_LOCAL_TIMINGS: dict[str, dict[str, object]] = {
    MESSAGES: dict(
        objective_seconds=10,
        timeout_seconds=5,
        max_concurrency=4,
        retry=RetryPolicy(0.5, 4),
        defer_seconds=1,
        traffic=Traffic(peak_per_second=5, service_seconds=0.1),
    ),
    ENGAGEMENT: dict(
        objective_seconds=20,
        timeout_seconds=5,
        batch_window_seconds=1,
        max_concurrency=3,
        retry=RetryPolicy(0.5, 5),
        defer_seconds=2,
        default_expiry_seconds=120,
        traffic=Traffic(peak_per_second=2, service_seconds=0.3),
    ),
    AI: dict(
        objective_seconds=20,
        timeout_seconds=10,
        max_concurrency=3,
        retry=RetryPolicy(0.5, 5),
        defer_seconds=1,
        default_expiry_seconds=120,
        task_options=(("debounce_seconds", "1"), ("vendor_latency_ms", "200"), ("vendor_failure_rate", "0")),
        traffic=Traffic(peak_per_second=2, service_seconds=0.3),
    ),
    BULK: dict(
        objective_seconds=60,
        timeout_seconds=10,
        batch_window_seconds=2,
        max_concurrency=2,
        retry=RetryPolicy(1, 10),
        defer_seconds=2,
        default_expiry_seconds=600,
        traffic=Traffic(peak_per_second=0.5, service_seconds=0.5),
    ),
    SCHEDULED: dict(
        objective_seconds=10,
        timeout_seconds=3,
        max_concurrency=2,
        retry=RetryPolicy(0.5, 2),
        default_expiry_seconds=5,
        tick=Tick(period_seconds=5, kind="scoring.tick"),
        traffic=Traffic(peak_per_second=0.2, service_seconds=0.1),
    ),
}


def _local_lanes() -> tuple[Lane, ...]:
    lanes = []
    for lane in catalogue():
        changes = _LOCAL_TIMINGS.get(lane.name, {})
        concurrency = int(changes.get("max_concurrency", lane.max_concurrency))  # type: ignore[call-overload]
        lanes.append(replace(lane, **changes, reserved_concurrency=concurrency))  # type: ignore[arg-type]
    return tuple(lanes)


def _build() -> dict[str, Environment]:
    lanes = catalogue()
    return {
        "dev": Environment(
            name="dev",
            lanes=_scaled(lanes, 0.1),
            dependencies=(Dependency(LLM_DEPENDENCY, limit=5, vendor_quota=10),),
            api=ApiConfig(webhook=Throttle(100, 200), jobs=Throttle(50, 100)),
            reserved_concurrency=False,
            # A new account starts at 10, which these lanes alone could exhaust; ask for the
            # standard increase first (`lanectl preflight` reads the real quota).
            account_concurrency_quota=1000,
            log_retention_days=7,
            retain_stateful=False,
            termination_protection=False,
        ),
        "staging": Environment(
            name="staging",
            lanes=_scaled(lanes, 0.25),
            dependencies=(Dependency(LLM_DEPENDENCY, limit=12, vendor_quota=20),),
            api=ApiConfig(webhook=Throttle(500, 1000), jobs=Throttle(100, 200)),
            reserved_concurrency=False,
            account_concurrency_quota=1000,
            log_retention_days=30,
            retain_stateful=True,
            termination_protection=False,
        ),
        "prod": Environment(
            name="prod",
            lanes=lanes,
            dependencies=(Dependency(LLM_DEPENDENCY, limit=45, vendor_quota=50),),
            api=ApiConfig(webhook=Throttle(2000, 5000), jobs=Throttle(200, 400)),
            # Both jobs routes at their throttle keep about 12 busy (400/s x 30 ms); twice that.
            jobs=JobsConfig(reserved_concurrency=25),
            reserved_concurrency=True,
            account_concurrency_quota=1000,
            log_retention_days=90,
            retain_stateful=True,
            termination_protection=True,
        ),
        "local": Environment(
            name="local",
            lanes=_local_lanes(),
            dependencies=(Dependency(LLM_DEPENDENCY, limit=2, vendor_quota=2),),
            # Measured: this machine's runtime keeps up with about 25 webhooks a second end to end
            # (door, consumer, sweeper and emulator share one interpreter; `make soak`). Past it
            # the route answers 429 as API Gateway would, instead of the door timing out. The
            # burst lets a campaign of a couple of hundred deliveries in at once; the lanes absorb it.
            # The jobs routes keep the same figures, which every scenario and the demo stay under.
            api=ApiConfig(webhook=Throttle(25, 200), jobs=Throttle(25, 200)),
            reserved_concurrency=False,
            account_concurrency_quota=1000,
            log_retention_days=1,
            retain_stateful=False,
            termination_protection=False,
            # The local API takes a SigV4 access key id as the name of the role its caller acts as
            # (ops/runtime/api.py): the client's default, `producer`, may act for every tenant; the
            # `partner-acme` role shows a producer bound to one.
            jobs=JobsConfig(
                tenant_queued_limit=200,
                callers=(
                    CallerGrant(f"arn:aws:iam::{LOCAL_ACCOUNT}:role/{LOCAL_PRODUCER}", (ALL_TENANTS,)),
                    CallerGrant(f"arn:aws:iam::{LOCAL_ACCOUNT}:role/partner-acme", ("acme",)),
                ),
            ),
            # The shortest cache allowed, and a quick early read: a rotation played locally shows
            # within seconds.
            webhook=WebhookConfig(secret_cache_seconds=60, secret_refresh_seconds=5),
            # Under load the emulator's lanes hold a thousand messages and more, minutes of wait:
            # the cap is what bounds a row there, not patience.
            sweeper=SweeperConfig(period_seconds=5, grace_seconds=8, patience_seconds=30, patience_cap_seconds=600),
            alarms=AlarmConfig(period_seconds=10, evaluation_periods=1, webhook_age_seconds=60),
            idempotency_ttl_seconds=3600,
        ),
    }


ENVIRONMENTS: dict[str, Environment] = _build()


class UnknownEnvironment(ValueError):
    pass


def get_environment(name: str | None) -> Environment:
    """The environment called `name`; a missing or unknown name names the valid ones."""
    valid = ", ".join(sorted(ENVIRONMENTS))
    if not name:
        raise UnknownEnvironment(f"no environment given; pass -c env=<name> with one of: {valid}")
    try:
        return ENVIRONMENTS[name]
    except KeyError:
        raise UnknownEnvironment(f"unknown environment {name!r}; valid environments: {valid}") from None
