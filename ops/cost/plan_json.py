"""`lanectl plan --output json`: the plan the text shows, as one document for scripts.

Figures are numbers in their units (seconds, dollars a month), never formatted text; an unbounded
headroom (a lane with no traffic) is null. The warnings are the text's, word for word.
"""

from __future__ import annotations

import math
from typing import Any

from ops.cost import pricing
from ops.cost.environment_cost import environment_cost
from ops.cost.listing_cost import listing_cost
from ops.cost.model_cost import model_warnings
from ops.cost.plan_checks import LanePlan, account_lines, dependency_lines, lane_warnings
from ops.cost.prices import LIST_PRICES
from stacks.config.environments import Environment


def _money(dollars: float) -> float:
    return round(dollars, 2)


def _lane(plan: LanePlan, env: Environment, cost: pricing.Cost) -> dict[str, Any]:
    lane = plan.lane
    units = pricing.units(lane)
    return {
        "lane": lane.name,
        "peak_per_second": plan.arrival_per_second,
        "service_seconds": lane.policy.service_seconds,
        "busy_slots": round(plan.busy_slots, 3),
        "slots": plan.slots,
        "max_concurrency": lane.policy.max_concurrency,
        "reserved_concurrency": lane.reserved_concurrency if env.reserved_concurrency else None,
        "headroom": None if math.isinf(plan.headroom) else round(plan.headroom, 3),
        "objective_seconds": lane.policy.objective_seconds,
        "queue_bound": round(plan.queue_bound, 1),
        "cost": {
            "entry": pricing.entry(lane),
            "messages_per_month": round(cost.messages),
            "write_units_per_message": units.writes,
            "read_units_per_message": units.reads,
            "sqs": _money(cost.sqs),
            "lambda": _money(cost.lambda_),
            "dynamodb": _money(cost.dynamodb),
            "api": _money(cost.api),
            "logs": _money(cost.logs),
            "xray": _money(cost.xray),
            "total": _money(cost.total),
        },
    }


def _listing(env: Environment, average_fraction: float, prices: Any) -> dict[str, Any]:
    listing = listing_cost(env, average_fraction, prices)
    return {
        "raw_log_gib": round(listing.log_gib, 3),
        "jobs_gib": round(listing.jobs_gib, 3),
        "scan_per_listing": _money(listing.scan),
        "index_rows_per_month": round(listing.rows_per_month),
        "index_per_month": _money(listing.index_per_month),
    }


def document(env: Environment, plans: list[LanePlan], *, utilisation: float, average_fraction: float) -> dict[str, Any]:
    prices = LIST_PRICES
    dependencies, dependency_warnings = dependency_lines(env, plans)
    account, account_warnings = account_lines(env)
    costs = environment_cost(env, average_fraction, prices)
    lanes = [_lane(plan, env, costs.lanes[plan.lane.name]) for plan in plans]
    fixed, edge, total = costs.fixed, costs.edge, costs.total
    return {
        "environment": env.name,
        "utilisation": utilisation,
        "average_fraction": average_fraction,
        "lanes": lanes,
        "dependencies": dependencies,
        "account": account,
        "cost": {
            "prices": {"region": prices.region, "as_of": prices.as_of, "hours_per_month": prices.hours_per_month},
            "fixed": {
                "idle_polling": _money(fixed.idle_polling),
                "sweeper": _money(fixed.sweeper),
                "lane_probe": _money(fixed.lane_probe),
                "alarms": _money(fixed.alarms),
                "alarm_count": fixed.alarm_count,
                "route_metrics": _money(fixed.route_metrics),
                "dashboard": _money(fixed.dashboard),
                "total": _money(fixed.total),
            },
            "source_accounts": None
            if costs.accounts is None
            else {
                "planned": costs.accounts.accounts,
                "door_instances": costs.accounts.door_instances,
                "note_write_units_per_month": round(costs.accounts.note_writes),
                "sweep_read_units_per_month": round(costs.accounts.sweep_reads),
                "total": _money(costs.accounts.built),
                "instead_metric_and_alarm_per_account": _money(costs.accounts.per_account_metrics),
                "instead_write_per_delivery": _money(costs.accounts.write_per_delivery),
            },
            "edge": {
                "enabled": env.edge.enabled,
                "requests_per_month": round(edge.requests),
                "cloudfront": _money(edge.cloudfront),
                "waf": _money(edge.waf),
                "fixed": _money(edge.fixed),
                "total": _money(edge.total),
            },
            "webhook_door": {
                "used": env.webhook_door.kind.value,
                "doors": {
                    kind.value: {
                        "requests_per_month": round(door.requests),
                        "requests": _money(door.api),
                        "route_metrics": _money(door.route_metrics),
                        "total": _money(door.total),
                        "bound": door.bound,
                    }
                    for kind, door in costs.doors.items()
                },
            },
            "mutual_tls": {
                "enabled": env.mutual_tls is not None,
                "domain_name": None if env.mutual_tls is None else env.mutual_tls.domain_name,
                "total": _money(0.0),
            },
            "models": [
                {
                    "lane": cost.lane,
                    "model_id": cost.model_id,
                    "calls_per_month": round(cost.calls),
                    "input_tokens_per_month": round(cost.input_tokens),
                    "output_tokens_per_month": round(cost.output_tokens),
                    "input_per_million": None if cost.price is None else cost.price.input_per_million,
                    "output_per_million": None if cost.price is None else cost.price.output_per_million,
                    "total": _money(cost.total),
                }
                for cost in costs.models.values()
            ],
            "total_per_month": _money(total),
            "erasure": {
                "raw_log_gib": round(costs.erasure.raw_log_gib, 3),
                "scan_per_request": _money(costs.erasure.scan),
            },
            "listing": _listing(env, average_fraction, prices),
        },
        "warnings": [w for p in plans for w in lane_warnings(p)]
        + dependency_warnings
        + account_warnings
        + model_warnings(env),
    }
