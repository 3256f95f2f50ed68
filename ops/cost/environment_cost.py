"""What an environment costs a month: its lanes, its fixed costs, the optional edge (CloudFront
and AWS WAF in front of the webhook) and each webhook door, priced on their own. `lanectl plan`
reads this.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from ops.cost.account_signal import AccountSignalCost, account_signal_cost
from ops.cost.door_cost import DoorCost, door_costs
from ops.cost.model_cost import ModelCost, model_costs
from ops.cost.prices import LIST_PRICES, Prices
from ops.cost.pricing import DOOR_ROUTES, Cost, FixedCost, entry, fixed_cost, lane_cost, row_kib
from pipeline.domain.dependencies.lane_pause import pause_reasons
from stacks.config.doors import WebhookDoorKind
from stacks.config.environments import Environment
from stacks.config.lanes import Lane
from stacks.config.on_call import sns_delivers
from stacks.runtime_env import SENDING_TASKS, STATUS_TASKS, probed_lanes

EDGE_RULES = 2
"""The edge's web ACL: the webhook path only, and the rate per source address."""


@dataclass(frozen=True)
class EdgeCost:
    requests: float
    cloudfront: float
    waf: float
    fixed: float

    @property
    def total(self) -> float:
        return self.cloudfront + self.waf + self.fixed


def edge_cost(lanes: Sequence[Lane], average_fraction: float, prices: Prices = LIST_PRICES) -> EdgeCost:
    """What CloudFront and AWS WAF in front of the webhook would cost a month: one request per
    delivery on the webhook lanes (the handshake is a handful), its body carried to the API."""
    webhook = [lane for lane in lanes if entry(lane) == "webhook"]
    requests = sum(lane.traffic.peak_per_second * average_fraction * prices.seconds_per_month for lane in webhook)
    to_origin_gb = (
        sum(
            lane.traffic.peak_per_second * average_fraction * prices.seconds_per_month * lane.traffic.payload_kib
            for lane in webhook
        )
        / 1024
        / 1024
    )
    million = 1_000_000
    return EdgeCost(
        requests=requests,
        cloudfront=requests / million * prices.cloudfront_per_million_https_requests
        + to_origin_gb * prices.cloudfront_to_origin_per_gb,
        waf=requests / million * prices.waf_per_million_requests,
        fixed=prices.waf_web_acl_per_month + EDGE_RULES * prices.waf_rule_per_month,
    )


@dataclass(frozen=True)
class ErasureCost:
    """What one erasure request reads: a consistent scan of the week of raw deliveries (the webhook
    log has no sender index; adapters/erasure.py), plus queries too small to price."""

    raw_log_gib: float
    """The webhook log's size when full: a retention's worth of rows at average traffic."""
    scan: float
    """Dollars per erasure."""


def erasure_cost(env: Environment, average_fraction: float, prices: Prices = LIST_PRICES) -> ErasureCost:
    kib = 0.0
    for lane in env.lanes:
        if entry(lane) != "webhook":
            continue
        rows = lane.traffic.peak_per_second * average_fraction * env.retention.raw_deliveries_days * 86_400
        kib += rows * row_kib(lane)
    read_units = kib / 4  # consistent: one unit per 4 KiB scanned, whatever the filter keeps
    return ErasureCost(raw_log_gib=kib / 1024 / 1024, scan=read_units / 1_000_000 * prices.dynamodb_per_million_reads)


@dataclass(frozen=True)
class EnvironmentCost:
    """Everything `lanectl plan` prices for one environment: the text and the JSON read this."""

    lanes: dict[str, Cost]
    fixed: FixedCost
    edge: EdgeCost
    edge_enabled: bool
    erasure: ErasureCost
    models: dict[str, ModelCost]
    """The model calls of each lane that has a model (ops/cost/model_cost.py)."""
    accounts: AccountSignalCost | None = None
    """Per source account, its last delivery and the quiet-accounts alarm (ops/cost/account_signal.py)."""
    doors: dict[WebhookDoorKind, DoorCost] = field(default_factory=dict)
    """Both webhook doors priced for this traffic (ops/cost/door_cost.py); the lanes' and the fixed
    costs already count the one the environment uses."""

    @property
    def total(self) -> float:
        lanes = sum(cost.total for cost in self.lanes.values())
        tokens = sum(cost.total for cost in self.models.values())
        # The quiet-accounts alarm is among the fixed alarms already.
        accounts = 0.0 if self.accounts is None else self.accounts.built - self.accounts.alarm
        return lanes + tokens + self.fixed.total + accounts + (self.edge.total if self.edge_enabled else 0.0)


def environment_cost(env: Environment, average_fraction: float, prices: Prices = LIST_PRICES) -> EnvironmentCost:
    return EnvironmentCost(
        lanes={
            lane.name: lane_cost(
                lane,
                average_fraction,
                prices,
                tracing_active=env.tracing_active,
                retention=env.retention,
                log_kept_days=env.log_retention_days,
                through_api=not (env.webhook_door.function_url and entry(lane) == "webhook"),
            )
            for lane in env.lanes
        },
        fixed=fixed_cost(
            len(env.lanes),
            env.sweeper.period_seconds,
            prices,
            undelivered_pages_alarm=sns_delivers(env.on_call),
            quiet_webhooks_alarm=env.alarms.webhooks_quiet_seconds is not None,
            quiet_accounts_alarm=env.accounts is not None,
            sending_lanes=sum(1 for lane in env.lanes if lane.policy.task in SENDING_TASKS),
            status_lanes=sum(1 for lane in env.lanes if lane.policy.task in STATUS_TASKS),
            pause_alarms=sum(
                len(
                    pause_reasons(
                        calls_model=env.model(lane.name) is not None,
                        sends=lane.policy.task in SENDING_TASKS,
                        watches_failures=lane.policy.pause_on_failures is not None,
                    )
                )
                for lane in env.lanes
            ),
            probe_period_seconds=env.probe.period_seconds,
            probed_lanes=len(probed_lanes(env)),
            # The webhook on a function URL is no route: its metrics are Lambda's, free.
            door_routes=DOOR_ROUTES - int(env.webhook_door.function_url),
        ),
        doors=door_costs(env, average_fraction, prices),
        edge=edge_cost(env.lanes, average_fraction, prices),
        edge_enabled=env.edge.enabled,
        erasure=erasure_cost(env, average_fraction, prices),
        models=model_costs(env, average_fraction, prices),
        accounts=account_signal_cost(env, average_fraction, prices),
    )
