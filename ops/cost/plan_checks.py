"""What `lanectl plan` computes per lane (Little's law) and every contradiction it warns about.

Each warning is a mistake a real catalogue or environment can make; tests/unit/ops/test_plan_warnings.py
makes each one fire. A check the catalogue's own definitions make true by construction (the
visibility timeout is defined from the timeout) is not a warning: it is enforced where it is
defined.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ops.cost.prices import ASSUMED
from stacks.config.environments import Environment
from stacks.config.lanes import QUEUE_RETENTION_DAYS, Lane

UNRESERVED_MINIMUM = 100
"""Lambda refuses reservations that would leave fewer unreserved executions than this."""
SWEEPER_RESERVATION = 1
PROBE_RESERVATION = 1
"""The lane probe's one reserved instance (stacks/constructs/lane_probe.py): two runs would step one ramp twice."""
DAY_SECONDS = 24 * 3600


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
    # An invocation holds one slot of a tenant's cap and runs its records one after another, so a
    # tenant never has more in flight than the lane has invocations. A cap above that is a mistake; a
    # cap equal to it (a small environment scaled down to it) binds where the lane does.
    cap = policy.tenant_quota
    if cap is not None and cap.limit > policy.max_concurrency:
        found.append(
            f"the tenant cap {cap.limit} is over the lane's MaximumConcurrency {policy.max_concurrency}: a tenant "
            "never has more records in flight than the lane has invocations (each runs its records one after "
            "another), so it never binds, yet costs two lease writes per tenant per batch"
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


def tenant_cap_lines(env: Environment) -> list[str]:
    lines = []
    for lane in env.lanes:
        policy = lane.policy
        if policy.tenant_quota is not None:
            cap = policy.tenant_quota
            lines.append(
                f"{lane.name}: at most {cap.limit} records of one tenant in flight ({cap.mode.value}), of the "
                f"lane's {policy.max_concurrency} invocations; protects {cap.protects}"
            )
    return lines


def account_lines(env: Environment) -> tuple[list[str], list[str]]:
    quota = env.account_concurrency_quota
    reservable = quota - UNRESERVED_MINIMUM
    door = env.webhook_reservation
    door_line = (
        [
            f"the webhook's function URL reserves {door}: its only bound ({env.api.webhook.rate_limit:g}/s at "
            f"{ASSUMED.door_seconds * 1000:.0f} ms a delivery, doubled), taken whatever reservations are set to"
        ]
        if door
        else []
    )
    if not env.reserved_concurrency:
        total = sum(lane.policy.max_concurrency for lane in env.lanes)
        lines = [
            f"reservations are off in {env.name}; the lanes can use up to {total} of the account's {quota}",
            *door_line,
        ]
        warnings = []
        if door > reservable:
            warnings.append(f"account: the webhook door's {door} reserved is over the {reservable} reservable")
        if total > quota:
            warnings.append(
                f"account: the lanes' MaximumConcurrency sums to {total}, over the account quota {quota}: "
                "at peak they throttle each other (and the API)"
            )
        return lines, warnings
    reserved = env.reserved_total + env.jobs_reservation + SWEEPER_RESERVATION + PROBE_RESERVATION + door
    lines = [
        f"reserved concurrency {reserved} (lanes {env.reserved_total} + jobs API {env.jobs_reservation} + sweeper "
        f"{SWEEPER_RESERVATION} + lane probe {PROBE_RESERVATION}{f' + webhook door {door}' if door else ''}) of a "
        f"{quota} quota; Lambda keeps {UNRESERVED_MINIMUM} unreserved, so {reservable} "
        "can be reserved",
        *door_line,
    ]
    warnings = []
    # Both jobs routes at their throttle, each request a door invocation (Little's law again).
    jobs_busy = 2 * env.api.jobs.rate_limit * ASSUMED.door_seconds
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
