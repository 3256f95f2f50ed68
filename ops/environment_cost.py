"""What an environment costs a month: its lanes, its fixed costs, and the optional edge
(CloudFront and AWS WAF in front of the webhook), priced on its own. `lanectl plan` reads this.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ops.prices import LIST_PRICES, Prices
from ops.pricing import Cost, FixedCost, entry, fixed_cost, lane_cost
from stacks.config.environments import Environment
from stacks.config.lanes import Lane

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
class EnvironmentCost:
    """Everything `lanectl plan` prices for one environment: the text and the JSON read this."""

    lanes: dict[str, Cost]
    fixed: FixedCost
    edge: EdgeCost
    edge_enabled: bool

    @property
    def total(self) -> float:
        lanes = sum(cost.total for cost in self.lanes.values())
        return lanes + self.fixed.total + (self.edge.total if self.edge_enabled else 0.0)


def environment_cost(env: Environment, average_fraction: float, prices: Prices = LIST_PRICES) -> EnvironmentCost:
    return EnvironmentCost(
        lanes={
            lane.name: lane_cost(
                lane, average_fraction, prices, tracing_active=env.tracing_active, retention=env.retention
            )
            for lane in env.lanes
        },
        fixed=fixed_cost(len(env.lanes), env.sweeper.period_seconds, prices),
        edge=edge_cost(env.lanes, average_fraction, prices),
        edge_enabled=env.edge.enabled,
    )
