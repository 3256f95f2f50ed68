"""`lanectl plan ENV`: capacity and cost from the lane catalogue's traffic assumptions.

Per lane, at peak: arrival rate λ, busy slots L = λ x service time (Little's law: how many
messages are in service at once on average), slots to provision so those run at the target
utilisation, and the queue bound at the objective, λ x objective (by Little's law again, a backlog
above it at peak means messages wait longer than the objective). Then the checks where the
configuration contradicts itself, and the monthly cost at list prices (see ops/pricing.py).
"""

from __future__ import annotations

import math
import textwrap
from dataclasses import dataclass

from ops import pricing
from ops.errors import FAILED, OK
from ops.output import JSON, TEXT, Console, Table, duration, money, table
from stacks.config.environments import Environment
from stacks.config.lanes import QUEUE_RETENTION_DAYS, Lane

UNRESERVED_MINIMUM = 100
"""Lambda refuses reservations that would leave fewer unreserved executions than this."""
SWEEPER_RESERVATION = 1
DAY_SECONDS = 24 * 3600
WIDTH = 110


@dataclass(frozen=True)
class LanePlan:
    lane: Lane
    arrival_per_second: float
    busy_slots: float
    slots: int
    queue_bound: float

    @property
    def headroom(self) -> float:
        """MaximumConcurrency over busy slots: below 1 the lane cannot keep up at peak."""
        return math.inf if self.busy_slots == 0 else self.lane.policy.max_concurrency / self.busy_slots


def plan_lane(lane: Lane, utilisation: float) -> LanePlan:
    arrival = lane.traffic.peak_per_second
    busy = arrival * lane.policy.service_seconds
    return LanePlan(
        lane=lane,
        arrival_per_second=arrival,
        busy_slots=busy,
        slots=max(1, math.ceil(busy / utilisation - 1e-9)),
        queue_bound=arrival * lane.policy.objective_seconds,
    )


def retry_span_seconds(lane: Lane) -> float:
    """The longest a message can spend on its lane before its last receive: each receive holds it
    for the visibility timeout (an invocation that dies) or its retry backoff, at most the cap."""
    return lane.policy.max_receives * max(lane.visibility_timeout_seconds, lane.policy.retry.cap_seconds)


def lane_warnings(plan: LanePlan) -> list[str]:
    lane = plan.lane
    policy = lane.policy
    found = []
    if policy.objective_seconds < policy.service_seconds:
        found.append(
            f"objective {policy.objective_seconds} s is shorter than one message's service time "
            f"({policy.service_seconds:g} s): every message misses it"
        )
    if policy.service_seconds > policy.task_time_limit_seconds:
        found.append(
            f"one message's service time ({policy.service_seconds:g} s) is over the task time limit "
            f"{policy.task_time_limit_seconds:g} s that the timeout {policy.timeout_seconds} s leaves: most tasks "
            "time out and are retried until they are dead-lettered"
        )
    span, retention = retry_span_seconds(lane), QUEUE_RETENTION_DAYS * DAY_SECONDS
    if span > retention:
        found.append(
            f"{policy.max_receives} receives of up to {span / policy.max_receives / 3600:.1f} h each (visibility "
            f"timeout or retry cap) outlast the queue's {QUEUE_RETENTION_DAYS}-day retention: SQS can delete a "
            "failing message before it reaches the DLQ"
        )
    if policy.max_concurrency < plan.busy_slots:
        found.append(
            f"MaximumConcurrency {policy.max_concurrency} is under the {plan.busy_slots:.1f} busy slots at peak: "
            "the backlog grows for as long as the peak lasts"
        )
    elif policy.max_concurrency < plan.slots:
        found.append(
            f"MaximumConcurrency {policy.max_concurrency} is under the {plan.slots} slots for the target "
            "utilisation: the lane keeps up at peak, but with little slack for a slow dependency"
        )
    return [f"{lane.name}: {text}" for text in found]


def dependency_lines(env: Environment, plans: list[LanePlan]) -> tuple[list[str], list[str]]:
    lines, warnings = [], []
    for dependency in env.dependencies:
        users = [p for p in plans if p.lane.policy.dependency == dependency.name]
        if not users:
            continue
        budget = sum(p.lane.policy.max_concurrency for p in users)
        busy = sum(p.busy_slots for p in users)
        names = " + ".join(p.lane.name for p in users)
        lines.append(
            f"{dependency.name}: shared limit {dependency.limit} ({dependency.mode.value}), vendor quota "
            f"{dependency.vendor_quota}; {names}: MaximumConcurrency {budget}, busy at peak {busy:.1f}"
        )
        if dependency.limit > dependency.vendor_quota:
            warnings.append(
                f"{dependency.name}: the shared limit {dependency.limit} is over the vendor quota "
                f"{dependency.vendor_quota}: the vendor will refuse calls the budget lets through"
            )
        if busy > dependency.limit:
            warnings.append(
                f"{dependency.name}: {busy:.1f} calls busy at peak exceed the shared limit {dependency.limit}: "
                f"{names} will defer work and their backlogs grow at peak"
            )
        if budget > dependency.limit:
            lines.append(
                f"  (the lanes' MaximumConcurrency sums to {budget}, over the limit {dependency.limit}: the budget "
                "defers the excess rather than calling the vendor with it; that is its job)"
            )
    return lines, warnings


def account_lines(env: Environment) -> tuple[list[str], list[str]]:
    quota = env.account_concurrency_quota
    reservable = quota - UNRESERVED_MINIMUM
    if not env.reserved_concurrency:
        total = sum(lane.policy.max_concurrency for lane in env.lanes)
        lines = [f"reservations are off in {env.name}; the lanes can use up to {total} of the account's {quota}"]
        warnings = []
        if total > quota:
            warnings.append(
                f"account: the lanes' MaximumConcurrency sums to {total}, over the account quota {quota}: "
                "at peak they throttle each other (and the API)"
            )
        return lines, warnings
    reserved = env.reserved_total + env.jobs_reservation + SWEEPER_RESERVATION
    lines = [
        f"reserved concurrency {reserved} (lanes {env.reserved_total} + jobs API {env.jobs_reservation} + sweeper "
        f"{SWEEPER_RESERVATION}) of a {quota} quota; Lambda keeps {UNRESERVED_MINIMUM} unreserved, so {reservable} "
        "can be reserved"
    ]
    warnings = []
    # Both jobs routes at their throttle, each request a door invocation (Little's law again).
    jobs_busy = 2 * env.api.jobs.rate_limit * pricing.ASSUMED.door_seconds
    if env.jobs_reservation < jobs_busy:
        warnings.append(
            f"jobs API: a reservation of {env.jobs_reservation} is under the {jobs_busy:.1f} invocations busy with "
            "both jobs routes at their throttle: a webhook flood can starve it, or past the reservation Lambda "
            "throttles it and producers get 5xx"
        )
    if reserved > reservable:
        warnings.append(
            f"account: {reserved} reserved is over the {reservable} reservable: the deploy fails "
            "(raise the quota, or turn reservations off for this environment)"
        )
    return lines, warnings


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
    prices = pricing.LIST_PRICES
    costs = pricing.environment_cost(env, average_fraction, prices)
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
        f"{fixed.alarm_count} alarms {money(fixed.alarms)}, dashboard {money(fixed.dashboard)}"
    )
    edge = costs.edge
    edge_detail = (
        f"{edge.requests / 1e6:,.1f}M webhook requests: CloudFront {money(edge.cloudfront)}, AWS WAF "
        f"{money(edge.waf)}, web ACL and {pricing.EDGE_RULES} rules {money(edge.fixed)}"
    )
    if env.edge.enabled:
        lines += _wrapped(f"edge (CloudFront + AWS WAF, on): {money(edge.total)} ({edge_detail})")
    else:
        lines += _wrapped(
            f"edge (CloudFront + AWS WAF): off; on, it would add about {money(edge.total)} ({edge_detail})"
        )
    lines.append(f"total: about {money(costs.total)} a month")
    usage = pricing.ASSUMED
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
        from ops.plan_json import document

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
    warnings += dependency_warnings + account_warnings
    console.line("dependencies")
    console.lines([w for line in dependency for w in _wrapped(line, "  ")] or ["  none shared"])
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
