"""Deployment environments as typed Python: one value per environment, nothing read from the
process. `app.py` picks one by name; everything else receives the `Environment` it was given."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from pipeline.domain.erasure import requests as erasure_rules
from pipeline.settings.auto_reply import AutoReplySettings, TenantAutoReply
from pipeline.settings.callers import ALL_TENANTS
from pipeline.settings.dependency_budget import DependencyBudget
from pipeline.settings.doors import MIB, JobsSettings, WebhookSettings
from pipeline.settings.sweeper_policy import SweeperSettings
from pipeline.settings.tenant_assets import AssetBinding, TenantAssets
from stacks.config.account_silence import LOCAL_ACCOUNTS, PROD_ACCOUNTS, AccountWatch
from stacks.config.cold_start import CodeStart
from stacks.config.doors import (
    EDGE_REGION,
    NO_FUNCTION_URLS,
    ApiConfig,
    EdgeConfig,
    JobsConfig,
    Throttle,
    WebhookDoor,
    WebhookDoorKind,
)
from stacks.config.lane_overrides import LaneOverride, lanes_for
from stacks.config.lane_probe import LaneProbeConfig
from stacks.config.lanes import (
    LLM_DEPENDENCY,
    Lane,
    catalogue,
)
from stacks.config.local_lanes import LOCAL_OVERRIDES
from stacks.config.models import DEFAULT_MODELS, LaneModel
from stacks.config.mutual_tls import MutualTlsConfig
from stacks.config.on_call import (
    EmailEndpoint,
    HttpsEndpoint,
    OnCallEndpoint,
    SlackChannel,
    TeamsChannel,
    Unattended,
    check_attended,
    check_endpoints,
)
from stacks.config.privacy import ErasureConfig, Retention

LOCAL_ACCOUNT = "123456789012"
"""The account the local runtime deploys into (moto's default)."""
LOCAL_PRODUCER = "producer"
"""The role the local runtime's jobs API client acts as unless told otherwise."""
LOCAL_ON_CALL = "on-call@localhost"
"""The local environment's one on-call address: the local runtime's inbox, not a real mailbox."""
LOCAL_SHOP = "shop-1"
"""The local tenant that owns the phone number and Page the demo, the scenarios and the tests
reply through."""
LOCAL_ASSETS = AssetBinding(
    {
        LOCAL_SHOP: TenantAssets(waba=("1000001",), phones=("1098765",), pages=("1077",), instagram=("1078",)),
        # The `partner-acme` role's tenant: its own number, so a job of its naming shop-1's is refused.
        "acme": TenantAssets(waba=("2000001",), phones=("2098765",), pages=("2077",)),
    }
)
"""Which Meta assets the local tenants own (settings/tenant_assets.py)."""
LOCAL_AUTO_REPLY = AutoReplySettings(tenants={LOCAL_SHOP: TenantAutoReply()})
"""Locally `shop-1`'s customers are answered on every channel; `acme`'s are left to its products."""


UNWRITTEN = Unattended(
    "this repository holds no real on-call endpoint or producer role for it: write them in on_call "
    "and jobs.settings.callers, and remove this, before its first deploy (lanectl preflight refuses it until then)"
)
"""Why staging and prod, as this repository ships them, synthesize with nobody paged and no caller."""


MAX_META_MESSAGES_PER_SECOND = 1000
"""Meta's highest throughput tier for a business phone number."""

RUN_SHARE_OF_PERIOD = 0.85
"""One sweep reads for most of its period, so the sweeper replays for most of the time and one
sweep has ended before the next starts."""


def sweep_run_seconds(period_seconds: int) -> float:
    """How long one sweep reads when the sweeper runs every `period_seconds`."""
    return round(period_seconds * RUN_SHARE_OF_PERIOD, 3)


@dataclass(frozen=True)
class SweeperConfig:
    """The sweeper as the stack deploys it: its rule fires every `period_seconds`, and the function
    is given `settings` as they are (pipeline/settings/sweeper_policy.py), their `run_seconds` the
    period's (`every` makes both from the period)."""

    period_seconds: int
    settings: SweeperSettings

    @classmethod
    def every(cls, period_seconds: int = 120, **policy: Any) -> SweeperConfig:
        """The sweeper run every `period_seconds`, with `policy` (SweeperSettings' fields other than
        run_seconds) where it differs from their defaults."""
        return cls(period_seconds, SweeperSettings(**policy, run_seconds=sweep_run_seconds(period_seconds)))

    def __post_init__(self) -> None:
        if self.period_seconds < 1:
            raise ValueError(f"sweeper period_seconds must be >= 1, got {self.period_seconds}")
        if self.settings.run_seconds != sweep_run_seconds(self.period_seconds):
            raise ValueError(
                f"sweeper run_seconds ({self.settings.run_seconds}) is not its period's "
                f"({sweep_run_seconds(self.period_seconds)} for {self.period_seconds} s): build it with "
                "SweeperConfig.every(period_seconds, ...)"
            )

    @property
    def timeout_seconds(self) -> int:
        """The function's timeout: its run, then the stop margin and the last page's writes."""
        return min(900, max(60, math.ceil(self.settings.run_seconds) + 15))


@dataclass(frozen=True)
class AlarmConfig:
    period_seconds: int = 60
    evaluation_periods: int = 2
    webhook_age_seconds: int = 300
    """Oldest unprocessed webhook-log row (and job row), as the sweeper reports it; a sweeper that
    stops reporting pages on its own alarm (stacks/constructs/schedules.py)."""
    unparseable_deliveries: int = 1
    """Signed deliveries the door logged but could not route, per period: each is work nothing
    does (a new Meta field or object, a payload the parser refuses)."""
    errors_threshold: int = 5
    jobs_shed_threshold: int = 100
    """Shedding is the design working; page only when a lane sheds this many jobs in a period."""
    rejected_signatures: int = 20
    """Refused signatures (missing, malformed or wrong) per period, for `evaluation_periods` in a
    row. Meta signs everything it sends, so a steady stream is either someone else posting or a
    secret that does not match Meta's (a rotation gone wrong)."""
    replies_failed_per_period: int = 5
    """Replies Meta took and then reported failed, per period, for `evaluation_periods` in a row
    (stacks/constructs/reply_alarms.py): a few are customers out of the service window; a stream
    is a template, a number or an account gone wrong."""
    webhooks_quiet_seconds: int | None = None
    """Page when no webhook at all was enqueued for this long: Meta stopped sending (a subscription
    disabled, a callback URL changed, the app's permissions removed) or the door stopped taking.
    None: off, for environments without steady traffic. A multiple of `period_seconds`, at most a
    day (CloudWatch's bound on an alarm's evaluation range)."""

    def __post_init__(self) -> None:
        quiet = self.webhooks_quiet_seconds
        if quiet is not None and (quiet <= 0 or quiet % self.period_seconds or quiet > 86400):
            raise ValueError(
                f"alarms webhooks_quiet_seconds must be a multiple of period_seconds ({self.period_seconds}) "
                f"up to 86400, got {quiet}"
            )

    @property
    def quiet_periods(self) -> int:
        """How many alarm periods of silence page."""
        assert self.webhooks_quiet_seconds is not None
        return self.webhooks_quiet_seconds // self.period_seconds


def _check_auto_reply(env_name: str, settings: AutoReplySettings) -> None:
    """The settings' `debounce_seconds` is copied from the ai lane's `debounce_seconds` task option
    at synthesis (stacks/runtime_env.py), so that the ai lane's own stamps and the messages lane's
    agree: one knob, refused as a second one."""
    if settings.debounce_seconds != AutoReplySettings().debounce_seconds:
        raise ValueError(
            f"{env_name}: auto_reply.debounce_seconds is copied from the ai lane's debounce_seconds task "
            "option at synthesis: set that option instead"
        )


@dataclass(frozen=True)
class Environment:
    name: str
    lanes: tuple[Lane, ...]
    dependencies: tuple[DependencyBudget, ...]
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
    webhook: WebhookSettings = field(default_factory=WebhookSettings)
    jobs: JobsConfig = field(default_factory=JobsConfig)
    sweeper: SweeperConfig = field(default_factory=SweeperConfig.every)
    probe: LaneProbeConfig = field(default_factory=LaneProbeConfig)
    """The probe that resumes a lane that paused itself (stacks/constructs/lane_probe.py)."""
    alarms: AlarmConfig = field(default_factory=AlarmConfig)
    webhook_door: WebhookDoor = field(default_factory=WebhookDoor)
    """Which door Meta's webhook comes in by: the HTTP API's route or a function URL
    (stacks/config/doors.py says what each gives up)."""
    edge: EdgeConfig = field(default_factory=EdgeConfig)
    mutual_tls: MutualTlsConfig | None = None
    accounts: AccountWatch | None = None
    """Per source account, when it last sent, and a page when one that normally sends goes quiet
    (stacks/config/account_silence.py); None: not watched."""
    """Meta's client certificate required on the webhook (stacks/config/mutual_tls.py); None: off."""
    retention: Retention = field(default_factory=Retention)
    """How long each kind of data is kept (stacks/config/privacy.py)."""
    tenant_assets: AssetBinding = field(default_factory=AssetBinding)
    """Which Meta assets (WhatsApp Business Accounts, phone-number ids, Pages, Instagram accounts)
    each tenant owns (lambdas/pipeline/settings/tenant_assets.py): a job's reply goes out only
    through its own tenant's. Empty binds nothing: no reply is sent until the tenants' assets are
    written here, as no producer may post until its role is granted (`JobsSettings.callers`)."""
    auto_reply: AutoReplySettings = field(default_factory=AutoReplySettings)
    """Which tenants' customers the model answers with no product in between, on which channels
    (lambdas/pipeline/settings/auto_reply.py); no tenant by default, so an environment replies to
    nobody until one is named here (and bound in `tenant_assets`)."""
    erasure: ErasureConfig = field(default_factory=ErasureConfig)
    idempotency_ttl_seconds: int = 7 * 24 * 3600
    graph_api_url: str = "https://graph.facebook.com/v21.0"
    """Meta's Graph API and its version, where replies are sent (the local runtime points its
    functions at its fake of it)."""
    meta_messages_per_second: int = 80
    """WhatsApp Cloud API's throughput per business phone number: 80 by default, up to 1,000 once
    Meta raises the number's tier. Sends are counted against it before they are made
    (lambdas/pipeline/domain/dependencies/rates.py), so at most this many leave in any one second."""
    models: tuple[LaneModel, ...] = DEFAULT_MODELS
    """The model each lane's task calls (stacks/config/models.py); a lane not named has none."""
    on_call: tuple[OnCallEndpoint, ...] = ()
    """Who every alarm pages (stacks/config/on_call.py): email addresses, HTTPS endpoints, Slack or
    Teams channels. `lanectl preflight` refuses an environment with none: its alarms would reach
    nobody; and one that keeps data does not synthesize with none unless `unattended` says why."""
    unattended: Unattended | None = None
    """Why an environment that keeps data is deployed with no on-call endpoint or no jobs caller
    (stacks/config/on_call.py); None: it is not, and synthesis refuses it without them."""
    powertools_version: str = "3.37.0"
    code_start: CodeStart = CodeStart.SOURCE
    """Whether the functions' asset ships bytecode compiled for their runtime
    (stacks/config/cold_start.py says which environment does and why)."""
    tracing_active: bool = False
    """X-Ray active tracing on every function. Lambda samples the first request each second and 5%
    of the rest, not configurably, so at production volume it traces nearly every invocation (about
    $5 per million webhooks, as much as the rest of the path). Off, functions pass tracing
    through: only requests already traced upstream are recorded."""

    def __post_init__(self) -> None:
        names = [lane.name for lane in self.lanes]
        if len(set(names)) != len(names):
            raise ValueError(f"{self.name}: duplicate lane names in {names}")
        if self.edge.enabled and self.region not in (None, EDGE_REGION):
            raise ValueError(
                f"{self.name}: the edge needs the stack in {EDGE_REGION} (AWS WAF for CloudFront exists only "
                f"there), and this environment is pinned to {self.region}"
            )
        if self.webhook_door.function_url and (self.edge.enabled or self.mutual_tls is not None):
            raise ValueError(
                f"{self.name}: the function URL door has no edge in front of it and no mutual TLS (the edge "
                "fronts the HTTP API's route; a function URL cannot ask for a client certificate): use the "
                "HTTP API door for either"
            )
        if self.webhook_door.function_url and self.region in NO_FUNCTION_URLS:
            raise ValueError(f"{self.name}: {self.region} has no Lambda function URLs: use the HTTP API door there")
        if self.mutual_tls is not None:
            if self.edge.enabled:
                raise ValueError(
                    f"{self.name}: mutual TLS and the edge exclude each other: CloudFront ends Meta's TLS "
                    "connection and passes no client certificate on to the API"
                )
            if self.region is not None and self.mutual_tls.certificate_region != self.region:
                raise ValueError(
                    f"{self.name}: the mutual TLS certificate is in {self.mutual_tls.certificate_region}, but a "
                    f"regional custom domain needs it in the stack's region, {self.region}"
                )
        if erasure_rules.LANE not in names:
            raise ValueError(f"{self.name}: erasures run on lane {erasure_rules.LANE!r}, which it lacks")
        check_endpoints(self.name, self.on_call, self.region)
        check_attended(self.name, self.retain_stateful, self.on_call, len(self.jobs.settings.callers), self.unattended)
        if not 3 <= self.meta_messages_per_second <= MAX_META_MESSAGES_PER_SECOND:
            raise ValueError(
                f"{self.name}: meta_messages_per_second must be 3..{MAX_META_MESSAGES_PER_SECOND} (Meta's highest tier)"
            )
        known = {d.name for d in self.dependencies}
        for lane in self.lanes:
            if lane.policy.dependency and lane.policy.dependency not in known:
                raise ValueError(f"{self.name}: lane {lane.name!r} uses unknown dependency {lane.policy.dependency!r}")
        _check_auto_reply(self.name, self.auto_reply)
        modelled = [model.lane for model in self.models]
        stray = sorted(set(modelled) - set(names))
        if stray or len(set(modelled)) != len(modelled):
            raise ValueError(f"{self.name}: models must each name one of its lanes, once (not {modelled})")

    def lane(self, name: str) -> Lane:
        for lane in self.lanes:
            if lane.name == name:
                return lane
        raise KeyError(f"no lane {name!r} in {self.name}; lanes: {', '.join(self.lane_names)}")

    def dependency(self, name: str) -> DependencyBudget:
        for dependency in self.dependencies:
            if dependency.name == name:
                return dependency
        raise KeyError(f"no dependency {name!r} in {self.name}")

    @property
    def lane_names(self) -> tuple[str, ...]:
        return tuple(lane.name for lane in self.lanes)

    def model(self, lane: str) -> LaneModel | None:
        return next((m for m in self.models if m.lane == lane), None)

    @property
    def reserved_total(self) -> int:
        """What the lanes' consumers reserve."""
        return sum(lane.reserved_concurrency for lane in self.lanes) if self.reserved_concurrency else 0

    @property
    def jobs_reservation(self) -> int:
        return self.jobs.reserved_concurrency if self.reserved_concurrency else 0

    @property
    def webhook_reservation(self) -> int:
        """The function URL door's bound, reserved whatever `reserved_concurrency` says; 0 behind the API."""
        return self.webhook_door.reservation(self.api.webhook)


def _build() -> dict[str, Environment]:
    lanes = catalogue()
    # dev, staging and prod page nobody until their on-call endpoints are written here
    # (on_call=(EmailEndpoint("..."), HttpsEndpoint("https://..."), ...)), and grant no producer
    # until its role is; `lanectl preflight` (make deploy) refuses each until then. staging and
    # prod keep data, so they synthesize only because they say so (UNWRITTEN); write the endpoints
    # and callers, and delete it.
    return {
        "dev": Environment(
            name="dev",
            lanes=lanes_for(lanes, scale=0.1),
            dependencies=(DependencyBudget(LLM_DEPENDENCY, limit=5, vendor_quota=10),),
            api=ApiConfig(webhook=Throttle(100, 200), jobs=Throttle(50, 100)),
            reserved_concurrency=False,
            # A new account starts at 10, which these lanes alone could exhaust; ask for the
            # standard increase first (`lanectl preflight` reads the real quota).
            account_concurrency_quota=1000,
            log_retention_days=7,
            retain_stateful=False,
            termination_protection=False,
            tracing_active=True,
            # The function URL door, $1.00 a million webhooks under the route, is tried where
            # nothing depends on the API's access log or per-route 5xx; 100/s x 30 ms x 2 = 6
            # instances reserved. Staging and prod keep the route (docs/ARCHITECTURE.md, the doors).
            webhook_door=WebhookDoor(WebhookDoorKind.FUNCTION_URL),
            retention=Retention(
                raw_deliveries_days=4, jobs_days=7, effects_days=14, erasure_requests_days=30, backup_days=7
            ),
        ),
        "staging": Environment(
            name="staging",
            lanes=lanes_for(lanes, scale=0.25),
            dependencies=(DependencyBudget(LLM_DEPENDENCY, limit=12, vendor_quota=20),),
            api=ApiConfig(webhook=Throttle(500, 1000), jobs=Throttle(100, 200)),
            reserved_concurrency=False,
            account_concurrency_quota=1000,
            log_retention_days=30,
            retain_stateful=True,
            termination_protection=False,
            tracing_active=True,
            unattended=UNWRITTEN,
            code_start=CodeStart.BYTECODE,
            retention=Retention(
                raw_deliveries_days=7, jobs_days=14, effects_days=30, erasure_requests_days=30, backup_days=14
            ),
        ),
        "prod": Environment(
            name="prod",
            lanes=lanes,
            dependencies=(DependencyBudget(LLM_DEPENDENCY, limit=45, vendor_quota=50),),
            api=ApiConfig(webhook=Throttle(2000, 5000), jobs=Throttle(200, 400)),
            # Both jobs routes at their throttle keep about 12 busy (400/s x 30 ms); twice that.
            jobs=JobsConfig(reserved_concurrency=25),
            reserved_concurrency=True,
            account_concurrency_quota=1000,
            log_retention_days=90,
            retain_stateful=True,
            termination_protection=True,
            unattended=UNWRITTEN,
            code_start=CodeStart.BYTECODE,
            # Prod hears from Meta around the clock; half an hour of silence leaves half of Meta's
            # hour before a failing Page subscription is disabled.
            alarms=AlarmConfig(webhooks_quiet_seconds=1800),
            accounts=PROD_ACCOUNTS,
            # Raw bodies a week: past the lane queue's 4 days, and time to look at a delivery that
            # went wrong. What the tasks made of them is the product's data, kept a quarter.
            retention=Retention(
                raw_deliveries_days=7, jobs_days=30, effects_days=90, erasure_requests_days=90, backup_days=35
            ),
        ),
        "local": Environment(
            name="local",
            lanes=lanes_for(lanes, overrides=LOCAL_OVERRIDES),
            dependencies=(DependencyBudget(LLM_DEPENDENCY, limit=2, vendor_quota=2),),
            # Measured: on a 2-core machine the runtime holds 50 webhooks a second end to end for
            # ten minutes (door, consumers, sweeper and emulator share one interpreter; `make
            # soak`, bench/REPORT.md), with room to 60. Past it the route answers 429 as API
            # Gateway would, instead of the door timing out. The burst lets a campaign of a couple
            # of hundred deliveries in at once; the lanes absorb it. The jobs routes keep 25, which
            # every scenario and the demo stay under.
            api=ApiConfig(webhook=Throttle(60, 200), jobs=Throttle(25, 200)),
            reserved_concurrency=False,
            account_concurrency_quota=1000,
            log_retention_days=1,
            retain_stateful=False,
            termination_protection=False,
            # The local API takes a SigV4 access key id as the name of the role its caller acts as
            # (local_aws/api.py): the client's default, `producer`, may act for every tenant; the
            # `partner-acme` role shows a producer bound to one.
            jobs=JobsConfig(
                JobsSettings(
                    tenant_queued_limit=200,
                    callers={
                        f"arn:aws:iam::{LOCAL_ACCOUNT}:role/{LOCAL_PRODUCER}": (ALL_TENANTS,),
                        f"arn:aws:iam::{LOCAL_ACCOUNT}:role/partner-acme": ("acme",),
                    },
                )
            ),
            # The shortest cache allowed, and a quick early read: a rotation played locally shows
            # within seconds.
            webhook=WebhookSettings(secret_cache_seconds=60, secret_refresh_seconds=5),
            # Under load the emulator's lanes hold a thousand messages and more, minutes of wait:
            # the cap is what bounds a row there, not patience.
            sweeper=SweeperConfig.every(5, grace_seconds=8, patience_seconds=30, patience_cap_seconds=600),
            probe=LaneProbeConfig(period_seconds=3, ramp_seconds=20, failing_alarm_seconds=30),
            # Two minutes without a delivery pages locally: longer than the demo's incidents, during
            # which Meta sends nothing, so a fresh demo's inbox holds only the pages its story calls for.
            alarms=AlarmConfig(
                period_seconds=10, evaluation_periods=1, webhook_age_seconds=60, webhooks_quiet_seconds=120
            ),
            idempotency_ttl_seconds=3600,
            accounts=LOCAL_ACCOUNTS,
            tenant_assets=LOCAL_ASSETS,
            auto_reply=LOCAL_AUTO_REPLY,
            retention=Retention(
                raw_deliveries_days=4, jobs_days=4, effects_days=4, erasure_requests_days=4, backup_days=1
            ),
            on_call=(EmailEndpoint(LOCAL_ON_CALL),),
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


__all__ = [
    "ALL_TENANTS",
    "EDGE_REGION",
    "ENVIRONMENTS",
    "LOCAL_ACCOUNT",
    "LOCAL_ASSETS",
    "LOCAL_AUTO_REPLY",
    "LOCAL_ON_CALL",
    "LOCAL_PRODUCER",
    "LOCAL_SHOP",
    "MIB",
    "AlarmConfig",
    "ApiConfig",
    "DependencyBudget",
    "EdgeConfig",
    "EmailEndpoint",
    "Environment",
    "ErasureConfig",
    "HttpsEndpoint",
    "JobsConfig",
    "JobsSettings",
    "LaneOverride",
    "OnCallEndpoint",
    "Retention",
    "SlackChannel",
    "SweeperConfig",
    "SweeperSettings",
    "TeamsChannel",
    "Throttle",
    "Unattended",
    "UnknownEnvironment",
    "WebhookDoor",
    "WebhookDoorKind",
    "WebhookSettings",
    "get_environment",
]
