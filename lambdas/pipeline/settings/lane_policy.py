"""A lane's policy: the part of a catalogue lane (stacks/config/lanes.py) that its functions act on.

The stack's `Lane` holds one; the consumer is given its own lane's (the `LANE` variable). The jobs
API is given only what its admission reads of every lane (`LaneCapacity`, the `LANES` variable)
and the sweeper only every lane's objective (`LANE_OBJECTIVES`): a whole policy is about 400
bytes, and Lambda holds a function's environment to 4 KB. What follows from these values is
derived here, once, for the stack and the functions alike.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from pipeline.settings.budget_mode import Mode as BudgetMode

SQS_MAX_VISIBILITY_SECONDS = 43_200
SQS_MAX_DELAY_SECONDS = 900
LAMBDA_MAX_TIMEOUT_SECONDS = 900
DLQ_RETENTION_SECONDS = 14 * 24 * 3600
"""SQS's maximum, and every dead-letter queue's: how long a dead letter can wait for a redrive."""


@dataclass(frozen=True)
class RetryPolicy:
    """Capped exponential backoff with full jitter, applied to a message's visibility."""

    base_seconds: float
    cap_seconds: float

    def __post_init__(self) -> None:
        if self.base_seconds <= 0 or self.cap_seconds < self.base_seconds:
            raise ValueError(f"retry policy needs 0 < base_seconds <= cap_seconds, got {self}")
        if self.cap_seconds > SQS_MAX_VISIBILITY_SECONDS:
            raise ValueError(f"retry cap_seconds must be <= {SQS_MAX_VISIBILITY_SECONDS} (SQS's longest visibility)")


@dataclass(frozen=True)
class TenantQuota:
    """At most `limit` invocations working on one tenant's records on this lane at once, each
    running them one after another, so at most `limit` of its records at once: a hard cap, for a
    limit outside this system that each tenant has on its own (`protects` names it). Fairness
    between tenants is not a reason: the lane's queue gives quiet tenants' messages first (SQS
    fair queues), at no write, where a cap costs two lease writes per tenant per batch and
    re-sends work that a free slot could have run."""

    limit: int
    protects: str
    mode: BudgetMode = BudgetMode.ENFORCE
    """`observe` counts and logs what it would defer and defers nothing, so a new limit can be
    rolled out, watched, then enforced."""

    def __post_init__(self) -> None:
        if self.limit < 1:
            raise ValueError(f"tenant quota must be >= 1, got {self.limit}")
        if not self.protects.strip():
            raise ValueError("a tenant quota names the per-tenant limit it protects")


@dataclass(frozen=True)
class FailureRatePause:
    """The lane pauses itself when its model or Meta fails at least `failure_share` of the calls one
    consumer instance made in the last `window_seconds`, once it made `min_calls` of them there
    (domain/dependencies/failure_rate.py). Only the dependency's own trouble counts (unavailable, timed out, a 5xx,
    unreachable), never a refusal of the record (a validation error) nor a rate limit, which the
    budgets and backoff handle. Per instance, so it costs no write: see failure_rate.py for when that
    is enough."""

    window_seconds: float = 60.0
    min_calls: int = 20
    failure_share: float = 0.5

    def __post_init__(self) -> None:
        if self.window_seconds <= 0 or self.min_calls < 1 or not 0.0 < self.failure_share <= 1.0:
            raise ValueError("pause_on_failures needs window_seconds > 0, min_calls >= 1 and 0 < failure_share <= 1")


@dataclass(frozen=True, kw_only=True)
class LanePolicy:
    name: str
    task: str
    """Name of the plain function that does the lane's work (see pipeline/tasks)."""
    objective_seconds: int
    """Latency objective: the age of the oldest message must stay under it (the age alarm)."""
    timeout_seconds: int
    """The consumer function's timeout."""
    batch_size: int
    max_concurrency: int
    """The event source mapping's MaximumConcurrency: the budget of the dependency behind it."""
    max_receives: int
    """Attempts before a record is dead-lettered (the queue's redrive policy, and the consumer's count)."""
    retry: RetryPolicy
    tenant_quota: TenantQuota | None
    """A hard cap on one tenant's records running at once, for a lane whose dependency limits each
    tenant (a vendor's per-account quota). None: the lane does no tenant bookkeeping at all."""
    default_expiry_seconds: int | None
    """Work without its own deadline expires this long after it was created (None: never)."""
    defer_seconds: int
    """Delay for work deferred by a budget; a deferral is not an attempt."""
    service_seconds: float
    """The expected time one record takes: what the planner sizes the lane with, what admission
    estimates its drain rate from, and the least time a record needs before its deadline to be
    started at all."""
    dependency: str | None = None
    """Name of a shared dependency budget (the environment's dependencies) held around each task."""
    task_options: tuple[tuple[str, str], ...] = ()
    pause_on_failures: FailureRatePause | None = None
    """Pause the lane when its model or Meta fails most calls for a while; None: never for that
    (a lane with no model and no sends has nothing to watch)."""

    def __post_init__(self) -> None:
        problems = []
        if not self.name or not self.task:
            problems.append("name and task must be set")
        if self.objective_seconds <= 0 or self.service_seconds <= 0:
            problems.append("objective_seconds and service_seconds must be > 0")
        if not 1 <= self.timeout_seconds <= LAMBDA_MAX_TIMEOUT_SECONDS:
            problems.append(f"timeout_seconds must be 1..{LAMBDA_MAX_TIMEOUT_SECONDS}")
        if self.batch_size < 1 or self.max_concurrency < 1 or self.max_receives < 1:
            problems.append("batch_size, max_concurrency and max_receives must be >= 1")
        if not 0 <= self.defer_seconds <= SQS_MAX_DELAY_SECONDS:
            problems.append(f"defer_seconds must be 0..{SQS_MAX_DELAY_SECONDS} (the SQS delay maximum)")
        if self.default_expiry_seconds is not None and self.default_expiry_seconds <= 0:
            problems.append("default_expiry_seconds must be > 0, or None for never")
        if len(dict(self.task_options)) != len(self.task_options):
            problems.append("task_options names an option twice")
        if problems:
            raise ValueError(f"lane {self.name!r}: " + "; ".join(problems))

    @property
    def task_time_limit_seconds(self) -> float:
        """Hard limit for one task: below the function timeout, leaving time to record the outcome."""
        return max(0.5, self.timeout_seconds * 0.8 - 1)

    @property
    def capacity_per_second(self) -> float:
        """Records a second the lane drains at full concurrency (Little's law: slots / service
        time). The jobs API's admission uses it until consumers have measured a drain rate."""
        return self.max_concurrency / self.service_seconds

    @property
    def options(self) -> Mapping[str, str]:
        return dict(self.task_options)


@dataclass(frozen=True)
class LaneCapacity:
    """What the jobs API's admission reads of a lane: its objective and how fast it drains."""

    objective_seconds: int
    max_concurrency: int
    batch_size: int
    service_seconds: float

    @classmethod
    def of(cls, policy: LanePolicy) -> LaneCapacity:
        return cls(policy.objective_seconds, policy.max_concurrency, policy.batch_size, policy.service_seconds)

    @property
    def slots(self) -> int:
        """Messages the lane's consumers can hold at once."""
        return self.max_concurrency * self.batch_size

    @property
    def capacity_per_second(self) -> float:
        """As LanePolicy.capacity_per_second."""
        return self.max_concurrency / self.service_seconds
