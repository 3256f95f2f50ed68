"""The lane catalogue: every lane's contract, read by the stack, the handlers (through the
environment the stack gives them), the local runtime and the capacity planner.

A lane is a queue, its dead-letter queue and one consumer whose concurrency is the budget of the
dependency behind it. Lanes exist to keep failure domains apart: interactive messages never wait
behind a bulk import or a comment flood.

No AWS CDK import here: the planner and the local runtime read this without loading jsii.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum

QUEUE_RETENTION_DAYS = 4
"""How long a lane queue keeps a message: the longest a message can outlive the send that made it."""
DLQ_RETENTION_DAYS = 14
"""SQS's maximum: the longest a person has to look at a dead letter before it is gone."""


class BudgetMode(StrEnum):
    """How a budget acts. `observe` counts and logs what it would defer and defers nothing, so a
    new limit can be rolled out, watched, then enforced."""

    ENFORCE = "enforce"
    OBSERVE = "observe"


@dataclass(frozen=True)
class RetryPolicy:
    """Capped exponential backoff with full jitter, applied to a message's visibility."""

    base_seconds: float
    cap_seconds: float

    def __post_init__(self) -> None:
        if self.base_seconds <= 0 or self.cap_seconds < self.base_seconds:
            raise ValueError(f"retry policy needs 0 < base <= cap, got {self}")


@dataclass(frozen=True)
class TenantQuota:
    """At most `limit` records of one tenant in flight on this lane at once: a hard cap, for a
    limit outside this system that each tenant has on its own (`protects` names it). Fairness
    between tenants is not a reason: the lane's queue gives quiet tenants' messages first (SQS
    fair queues), at no write, where a cap costs two lease writes per tenant per batch and
    re-sends work that a free slot could have run."""

    limit: int
    protects: str
    mode: BudgetMode = BudgetMode.ENFORCE

    def __post_init__(self) -> None:
        if self.limit < 1:
            raise ValueError(f"tenant quota must be >= 1, got {self.limit}")
        if not self.protects.strip():
            raise ValueError("a tenant quota names the per-tenant limit it protects")


@dataclass(frozen=True)
class Traffic:
    """Planning assumptions: what the capacity planner turns into slots, queue bounds and cost."""

    peak_per_second: float
    service_seconds: float
    payload_kib: float = 2.0


@dataclass(frozen=True)
class Tick:
    """A periodic message put on a lane by a schedule. EventBridge schedules run at most once a
    minute; the true period is kept in the template's metadata for the local runtime, whose
    clock is scaled to seconds."""

    period_seconds: int
    kind: str
    tenant: str = "system"


@dataclass(frozen=True)
class Lane:
    name: str
    purpose: str
    task: str
    """Name of the plain function that does the lane's work (see lambdas/pipeline/tasks)."""
    objective_seconds: int
    """Latency objective: the age of the oldest message must stay under it (the age alarm)."""
    timeout_seconds: int
    memory_mb: int
    batch_size: int
    batch_window_seconds: int
    max_concurrency: int
    """The event source mapping's MaximumConcurrency: the budget of the dependency behind it."""
    reserved_concurrency: int
    """>= max_concurrency, so throttles never eat receive counts. Environments may switch it off."""
    max_receives: int
    retry: RetryPolicy
    tenant_quota: TenantQuota | None
    """A hard cap on one tenant's records in flight, for a lane whose dependency limits each tenant
    (a vendor's per-account quota). None: the lane does no tenant bookkeeping at all."""
    default_expiry_seconds: int | None
    """Work without its own deadline expires this long after it was created (None: never)."""
    defer_seconds: int
    """Delay for work deferred by a budget; a deferral is not an attempt."""
    traffic: Traffic
    dependency: str | None = None
    """Name of a shared dependency budget (see Environment.dependencies) held around each task."""
    task_options: tuple[tuple[str, str], ...] = field(default_factory=tuple)
    tick: Tick | None = None
    """A schedule that puts a tick on this lane (see Tick)."""
    personal: bool = True
    """Its work is about a person (a message, a comment, a conversation): its rows and effects carry
    that person's hash, and each costs an index write (the `by_sender` index an erasure queries)."""

    def __post_init__(self) -> None:
        problems = []
        if self.max_concurrency < 2:
            problems.append("max_concurrency must be >= 2 (the SQS event source minimum)")
        if self.reserved_concurrency and self.reserved_concurrency < self.max_concurrency:
            problems.append("reserved_concurrency must be >= max_concurrency")
        if self.max_receives < 5:
            problems.append("max_receives must be >= 5")
        if not 1 <= self.batch_size <= 10_000:
            problems.append("batch_size must be 1..10000")
        if self.batch_size > 10 and self.batch_window_seconds < 1:
            problems.append("batch_size > 10 needs a batch window of >= 1 s")
        if not 0 <= self.batch_window_seconds <= 300:
            problems.append("batch_window_seconds must be 0..300")
        if not 1 <= self.timeout_seconds <= 900:
            problems.append("timeout_seconds must be 1..900")
        if self.visibility_timeout_seconds > 43_200:
            problems.append("visibility timeout would exceed SQS's 12 h maximum")
        if self.defer_seconds > 900:
            problems.append("defer_seconds must be <= 900 (the SQS delay maximum)")
        if problems:
            raise ValueError(f"lane {self.name!r}: " + "; ".join(problems))

    @property
    def visibility_timeout_seconds(self) -> int:
        """AWS's guidance for SQS-triggered functions: six times the function timeout plus the
        batch window, so a message is not redelivered while a retried invocation still holds it."""
        return 6 * self.timeout_seconds + self.batch_window_seconds

    @property
    def task_time_limit_seconds(self) -> float:
        """Hard limit for one task: below the function timeout, leaving time to record the outcome."""
        return max(0.5, self.timeout_seconds * 0.8 - 1)

    def options(self) -> dict[str, str]:
        return dict(self.task_options)


MESSAGES = "messages"
ENGAGEMENT = "engagement"
AI = "ai"
BULK = "bulk"
SCHEDULED = "scheduled"

LLM_DEPENDENCY = "llm"


def catalogue() -> tuple[Lane, ...]:
    """Production-shaped lanes. Environments scale concurrency and times from these."""
    return (
        Lane(
            name=MESSAGES,
            purpose="Inbound WhatsApp/Instagram messages and delivery statuses: interactive, small.",
            task="messages",
            objective_seconds=30,
            timeout_seconds=30,
            memory_mb=512,
            batch_size=10,
            batch_window_seconds=0,
            max_concurrency=20,
            reserved_concurrency=25,
            max_receives=5,
            retry=RetryPolicy(base_seconds=2, cap_seconds=60),
            # Storing an inbound message calls nothing a tenant has a share of, so a cap here only
            # costs writes: two lease updates per tenant per batch, the largest CPU cost of the
            # local runtime at 20 webhooks a second.
            tenant_quota=None,
            default_expiry_seconds=None,
            defer_seconds=5,
            traffic=Traffic(peak_per_second=200, service_seconds=0.05),
        ),
        Lane(
            name=ENGAGEMENT,
            purpose="Comment and feed changes: bursty (a post can draw hundreds of comments a "
            "minute), kept off the messages lane so a campaign never delays a customer's message.",
            task="engagement",
            objective_seconds=300,
            timeout_seconds=60,
            memory_mb=512,
            batch_size=10,
            batch_window_seconds=5,
            max_concurrency=12,
            reserved_concurrency=12,
            max_receives=6,
            retry=RetryPolicy(base_seconds=5, cap_seconds=300),
            tenant_quota=None,
            default_expiry_seconds=6 * 3600,
            defer_seconds=30,
            traffic=Traffic(peak_per_second=25, service_seconds=0.3),
            dependency=LLM_DEPENDENCY,
        ),
        Lane(
            name=AI,
            purpose="AI reply turns: slow, bound by the model vendor's concurrency quota.",
            task="ai",
            objective_seconds=120,
            timeout_seconds=60,
            memory_mb=512,
            batch_size=1,
            batch_window_seconds=0,
            max_concurrency=40,
            reserved_concurrency=40,
            max_receives=5,
            retry=RetryPolicy(base_seconds=2, cap_seconds=120),
            # The vendor's quota is shared by every tenant: the dependency budget bounds it.
            tenant_quota=None,
            default_expiry_seconds=3600,
            defer_seconds=5,
            traffic=Traffic(peak_per_second=6, service_seconds=4.0),
            dependency=LLM_DEPENDENCY,
            task_options=(
                ("debounce_seconds", "4"),
                ("vendor_latency_ms", "3000"),
                ("vendor_failure_rate", "0"),
            ),
        ),
        Lane(
            name=BULK,
            purpose="Imports and knowledge syncs in pages: large, patient, never in front of live work.",
            task="bulk",
            objective_seconds=1800,
            timeout_seconds=300,
            memory_mb=1024,
            batch_size=5,
            batch_window_seconds=20,
            max_concurrency=5,
            reserved_concurrency=5,
            max_receives=5,
            retry=RetryPolicy(base_seconds=30, cap_seconds=900),
            tenant_quota=TenantQuota(
                limit=2,
                protects="Meta's Graph API rate limit per business account (business use case "
                "limits): an import's pages call it, and two pages at once stay under it",
            ),
            default_expiry_seconds=24 * 3600,
            defer_seconds=60,
            traffic=Traffic(peak_per_second=0.2, service_seconds=10.0, payload_kib=8.0),
            # A tenant's own records (catalogues, knowledge bases); erasures run here too, but rarely.
            personal=False,
        ),
        Lane(
            name=SCHEDULED,
            purpose="Periodic ticks (scoring, reminders) from a schedule: a tick that waited out its "
            "cadence is dropped, because the next tick already covers it.",
            task="scheduled",
            objective_seconds=60,
            timeout_seconds=10,
            memory_mb=256,
            batch_size=10,
            batch_window_seconds=0,
            max_concurrency=2,
            reserved_concurrency=2,
            max_receives=5,
            retry=RetryPolicy(base_seconds=1, cap_seconds=10),
            tenant_quota=None,
            default_expiry_seconds=60,
            defer_seconds=1,
            traffic=Traffic(peak_per_second=0.2, service_seconds=0.5),
            tick=Tick(period_seconds=60, kind="scoring.tick"),
            personal=False,
        ),
    )
