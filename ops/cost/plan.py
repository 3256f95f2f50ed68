"""`lanectl plan ENV`: capacity and cost from the lane catalogue's traffic assumptions.

Per lane, at peak: arrival rate λ, busy slots L = λ x service time (Little's law: how many
messages are in service at once on average), slots to provision so those run at the target
utilisation, and the queue bound at the objective, λ x objective (by Little's law again, a backlog
above it at peak means messages wait longer than the objective). Then the checks where the
configuration contradicts itself (ops/cost/plan_checks.py), and the monthly cost at list prices (see
ops/cost/environment_cost.py).
"""

from __future__ import annotations

import math
import textwrap

from ops.cost import pricing
from ops.cost.account_signal import AccountSignalCost
from ops.cost.door_cost import DoorCost
from ops.cost.environment_cost import EDGE_RULES, environment_cost
from ops.cost.listing_cost import listing_cost
from ops.cost.model_cost import caching, model_warnings
from ops.cost.plan_checks import LanePlan, account_lines, dependency_lines, lane_warnings, plan_lane, tenant_cap_lines
from ops.cost.prices import ASSUMED, LIST_PRICES
from ops.errors import FAILED, OK
from ops.output import JSON, TEXT, Console, Table, duration, money, table
from stacks.config.doors import WebhookDoorKind
from stacks.config.environments import Environment

WIDTH = 110

__all__ = ["LanePlan", "plan_lane", "run_plan"]


def _wrapped(text: str, indent: str = "") -> list[str]:
    return textwrap.wrap(text, width=WIDTH, initial_indent=indent, subsequent_indent=indent + "  ")


def _capacity_table(plans: list[LanePlan], env: Environment) -> Table:
    rows = []
    for p in plans:
        lane = p.lane
        rows.append(
            (
                lane.name,
                f"{p.arrival_per_second:g}",
                f"{lane.policy.service_seconds:g}s",
                f"{p.busy_slots:.1f}",
                p.slots,
                lane.policy.max_concurrency,
                lane.reserved_concurrency if env.reserved_concurrency else "off",
                "inf" if math.isinf(p.headroom) else f"{p.headroom:.1f}x",
                duration(lane.policy.objective_seconds),
                f"{p.queue_bound:,.0f}",
            )
        )
    return table(
        ("LANE", "PEAK/S", "SERVICE", "BUSY", "SLOTS", "MAX CONC", "RESERVED", "HEADROOM", "AGE ALARM", "QUEUE BOUND"),
        rows,
        right=(1, 2, 3, 4, 5, 6, 7, 8, 9),
    )


def _cost_lines(env: Environment, average_fraction: float) -> list[str | Table]:
    prices = LIST_PRICES
    costs = environment_cost(env, average_fraction, prices)
    rows = []
    for lane in env.lanes:
        cost = costs.lanes[lane.name]
        per = pricing.units(lane)
        rows.append(
            (
                lane.name,
                pricing.entry(lane),
                f"{cost.messages / 1e6:,.1f}M",
                f"{per.writes:g}/{per.reads:g}",
                money(cost.sqs),
                money(cost.lambda_),
                money(cost.dynamodb),
                money(cost.api),
                money(cost.logs),
                money(cost.xray),
                money(cost.total),
            )
        )
    fixed = costs.fixed
    model_rows = [
        (
            cost.model_id,
            cost.lane,
            f"{cost.calls / 1e6:,.1f}M",
            f"{cost.input_tokens / 1e6:,.0f}M",
            f"{cost.output_tokens / 1e6:,.0f}M",
            "no price"
            if cost.price is None
            else f"${cost.price.input_per_million:g}/${cost.price.output_per_million:g}",
            money(cost.total),
        )
        for cost in costs.models.values()
    ]
    lines: list[str | Table] = [
        f"monthly cost at list prices ({prices.region}, {prices.as_of}, no free tier; {prices.hours_per_month:g} h; "
        f"average traffic = {average_fraction:.0%} of peak)"
    ]
    lines.append(
        table(
            ("LANE", "ENTRY", "MSGS/MONTH", "WRU/RRU", "SQS", "LAMBDA", "DYNAMODB", "API", "LOGS", "X-RAY", "TOTAL"),
            rows,
            right=(2, 3, 4, 5, 6, 7, 8, 9, 10),
        )
    )
    lines.append(
        f"fixed: idle SQS polling {money(fixed.idle_polling)}, sweeper {money(fixed.sweeper)}, "
        f"lane probe {money(fixed.lane_probe)}, "
        f"{fixed.alarm_count} alarms {money(fixed.alarms)}, route metrics {money(fixed.route_metrics)}, "
        f"dashboard {money(fixed.dashboard)}"
    )
    if model_rows:
        lines.append("model tokens (Bedrock on-demand; one call per message, as each lane's model plans it)")
        lines.append(
            table(
                ("MODEL", "LANE", "CALLS/MONTH", "TOKENS IN", "TOKENS OUT", "$/M IN/OUT", "TOTAL"),
                model_rows,
                right=(2, 3, 4, 6),
            )
        )
        for model in costs.models.values():
            if model.price is not None and model.calls:
                lines.append(
                    f"a call on {model.lane} ({model.input_tokens / model.calls:,.0f} tokens in, "
                    f"{model.output_tokens / model.calls:,.0f} out): ${model.per_call:.6f}, "
                    f"${model.per_call * 1000:,.2f} per 1,000"
                )
                planned = next(m for m in env.models if m.lane == model.lane)
                lines += _wrapped(caching(planned, model))
    edge = costs.edge
    edge_detail = (
        f"{edge.requests / 1e6:,.1f}M webhook requests: CloudFront {money(edge.cloudfront)}, AWS WAF "
        f"{money(edge.waf)}, web ACL and {EDGE_RULES} rules {money(edge.fixed)}"
    )
    if env.edge.enabled:
        lines += _wrapped(f"edge (CloudFront + AWS WAF, on): {money(edge.total)} ({edge_detail})")
    else:
        lines += _wrapped(
            f"edge (CloudFront + AWS WAF): off; on, it would add about {money(edge.total)} ({edge_detail})"
        )
    lines += _door_lines(env, costs.doors)
    lines += _wrapped(f"mutual TLS on the webhook: {_mutual_tls_state(env)}, {money(0)}; {MUTUAL_TLS_COST}")
    lines += _wrapped(_accounts_line(env, costs.accounts))
    lines += _wrapped(_auto_reply_line(env))
    lines.append(f"total: about {money(costs.total)} a month")
    erasure = costs.erasure
    lines += _wrapped(
        f"each erasure request: about {money(erasure.scan)}, a consistent scan of the "
        f"{env.retention.raw_deliveries_days}-day webhook log (about {erasure.raw_log_gib:,.1f} GiB; it has no "
        "sender index, which would cost a write unit on every delivery); jobs and data are found by query"
    )
    listing = listing_cost(env, average_fraction, prices)
    lines += _wrapped(
        f"each listing of the raw log (lanectl trace --tenant, lanectl replay): about {money(listing.scan)}, an "
        f"eventually consistent scan of the webhook log ({listing.log_gib:,.1f} GiB) and the jobs table "
        f"({listing.jobs_gib:,.1f} GiB); an index by tenant and time would cost about "
        f"{money(listing.index_per_month)} a month ({listing.rows_per_month / 1e6:,.1f}M entries, a write unit "
        f"each), as much as {listing.break_even:,.0f} listings"
    )
    usage = ASSUMED
    lines += _wrapped(
        "assumed: full consumer batches; every webhook or job through the API (one request, one door invocation of "
        f"{usage.door_seconds * 1000:.0f} ms) and a row; ticks come from a schedule with no row; "
        f"{usage.log_kib_per_message:g} KiB of logs per message; webhook rows kept {env.retention.raw_deliveries_days} "
        f"days, job rows {env.retention.jobs_days}, effects {env.retention.effects_days} (the environment's "
        "retention; DYNAMODB includes their storage and backups); X-RAY at Lambda's fixed sampling where tracing is "
        "active "
        f"(here: {'active' if env.tracing_active else 'passed through, so none'}). WRU/RRU = DynamoDB units per "
        "message. Not included: custom metrics, data transfer (but the edge's), KMS, Secrets Manager."
    )
    return lines


def _auto_reply_line(env: Environment) -> str:
    tenants = sorted(tenant for tenant, config in env.auto_reply.tenants.items() if config.channels)
    state = f"on for {', '.join(tenants)}" if tenants else "on for no tenant, so not in the total"
    return (
        f"auto-reply: {state}; each message it starts a turn for adds on the messages lane "
        f"{pricing.AUTO_REPLY_WRITES} write units (its commit becomes a transaction of five items), "
        f"{pricing.AUTO_REPLY_READS} read unit and {pricing.AUTO_REPLY_SQS} SQS request (the turn): "
        f"{money(pricing.auto_reply_per_million())} per million such messages, beside the ai lane's turns, "
        "which its traffic plan must count"
    )


DOOR_NAMES = {WebhookDoorKind.HTTP_API: "HTTP API route", WebhookDoorKind.FUNCTION_URL: "function URL"}


def _door_lines(env: Environment, doors: dict[WebhookDoorKind, DoorCost]) -> list[str | Table]:
    """Both webhook doors side by side; the lanes' API column and the total count the one in use."""
    used = env.webhook_door.kind
    rows = [
        (
            DOOR_NAMES[kind] + (" (used)" if kind is used else ""),
            f"{door.requests / 1e6:,.1f}M",
            money(door.api),
            money(door.route_metrics),
            money(door.total),
            door.bound,
        )
        for kind, door in doors.items()
    ]
    saved = doors[WebhookDoorKind.HTTP_API].total - doors[WebhookDoorKind.FUNCTION_URL].total
    return [
        "webhook door (what each way in costs beyond the invocation both pay)",
        table(("DOOR", "WEBHOOKS/MONTH", "REQUESTS", "ROUTE METRICS", "TOTAL", "BOUND"), rows, right=(1, 2, 3, 4)),
        *_wrapped(
            f"the function URL saves {money(saved)} a month here and gives up the route's throttle, access log and "
            "5xx by route, the edge and mutual TLS (docs/ARCHITECTURE.md, the webhook door)"
        ),
    ]


def _accounts_line(env: Environment, accounts: AccountSignalCost | None) -> str:
    if env.accounts is None or accounts is None:
        return "source accounts: not watched one by one (the pipeline-wide quiet alarm only, where it is on)"
    silence = env.accounts.silence
    per_delivery = accounts.note_writes / max(accounts.deliveries, 1)
    return (
        f"source accounts ({accounts.accounts:,} planned): last delivery per account and the QuietAccounts alarm "
        f"{money(accounts.built)} (door notes at most once per {silence.note_seconds:g} s per account per "
        f"instance: at most {accounts.note_writes / 1e6:,.1f}M write units with {accounts.door_instances} "
        f"instances, at most {per_delivery:.3f} extra calls a delivery; sweeps read "
        f"{accounts.sweep_reads / 1e6:,.2f}M read units; one metric, one alarm); instead a metric and an alarm "
        f"per account: {money(accounts.per_account_metrics)}; a write per delivery "
        f"({accounts.deliveries / 1e6:,.0f}M): {money(accounts.write_per_delivery)} and a third AWS call on every "
        "delivery"
    )


MUTUAL_TLS_COST = (
    "API Gateway charges by the request alone, the same through a custom domain with mutual TLS; an ACM public "
    "certificate is free, and the truststore is one S3 object of a few KiB"
)


def _mutual_tls_state(env: Environment) -> str:
    if env.mutual_tls is None:
        return "off"
    return f"on at {env.mutual_tls.domain_name}"


def run_plan(
    env: Environment,
    console: Console,
    *,
    utilisation: float,
    average_fraction: float,
    strict: bool,
    output: str = TEXT,
) -> int:
    plans = [plan_lane(lane, utilisation) for lane in env.lanes]
    if output == JSON:
        from ops.cost.plan_json import document

        planned = document(env, plans, utilisation=utilisation, average_fraction=average_fraction)
        console.json(planned)
        return FAILED if strict and planned["warnings"] else OK
    console.line(
        f"capacity plan for {env.name} (peak traffic from the lane catalogue; target utilisation {utilisation:.0%})"
    )
    console.line()
    console.table(_capacity_table(plans, env))
    console.lines(
        _wrapped(
            "BUSY = peak x service time (Little's law); SLOTS = BUSY / utilisation, rounded up; HEADROOM = MAX CONC "
            "/ BUSY; QUEUE BOUND = peak x objective, the backlog above which messages wait longer than the objective"
        )
    )
    console.line()
    warnings = [w for p in plans for w in lane_warnings(p)]
    dependency, dependency_warnings = dependency_lines(env, plans)
    account, account_warnings = account_lines(env)
    warnings += dependency_warnings + account_warnings + model_warnings(env)
    console.line("dependencies")
    console.lines([w for line in dependency for w in _wrapped(line, "  ")] or ["  none shared"])
    console.line("tenant caps")
    console.lines([w for line in tenant_cap_lines(env) for w in _wrapped(line, "  ")] or ["  none"])
    console.line("account concurrency")
    console.lines([w for line in account for w in _wrapped(line, "  ")])
    console.line()
    console.lines(_cost_lines(env, average_fraction))
    console.line()
    if warnings:
        console.line(f"warnings ({len(warnings)})")
        console.lines([line for w in warnings for line in _wrapped(f"! {w}", "  ")])
    else:
        console.line("no warnings: the configuration is consistent with its traffic assumptions")
    return FAILED if strict and warnings else OK
