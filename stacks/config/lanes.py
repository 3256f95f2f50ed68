"""The lane catalogue: every lane's contract, read by the stack, the handlers (through the
environment the stack gives them), the local runtime and the capacity planner.

A lane is a queue, its dead-letter queue and one consumer whose concurrency is the budget of the
dependency behind it. Lanes exist to keep failure domains apart: interactive messages never wait
behind a bulk import or a comment flood.

No AWS CDK import here: the planner and the local runtime read this without loading jsii.
"""

from __future__ import annotations

from dataclasses import dataclass

from pipeline.settings.lane_policy import (
    DLQ_RETENTION_SECONDS,
    SQS_MAX_VISIBILITY_SECONDS,
    BudgetMode,
    FailureRatePause,
    LanePolicy,
    RetryPolicy,
    TenantQuota,
)

QUEUE_RETENTION_DAYS = 4
"""How long a lane queue keeps a message: the longest a message can outlive the send that made it."""
DLQ_RETENTION_DAYS = DLQ_RETENTION_SECONDS // (24 * 3600)
"""SQS's maximum: the longest a person has to look at a dead letter before it is gone."""


@dataclass(frozen=True)
class Traffic:
    """Planning assumptions: what the capacity planner turns into slots, queue bounds and cost
    (with the policy's service_seconds, which the functions use too)."""

    peak_per_second: float
    payload_kib: float = 2.0


@dataclass(frozen=True)
class Tick:
    """A periodic message put on a lane by a schedule. EventBridge schedules run at most once a
    minute; the true period is kept in the template's metadata for the local runtime, whose
    clock is scaled to seconds."""

    period_seconds: int
    kind: str
    tenant: str = "system"


@dataclass(frozen=True, kw_only=True)
class Lane:
    """A lane as the stack and the planner see it: its policy, which its functions are given as it
    is (pipeline/settings/lane_policy.py), and what only the template and the planner need."""

    policy: LanePolicy
    purpose: str
    memory_mb: int
    batch_window_seconds: int
    reserved_concurrency: int
    """>= the policy's max_concurrency, so throttles never eat receive counts. Used only where the
    environment turns reservations on."""
    traffic: Traffic
    tick: Tick | None = None
    """A schedule that puts a tick on this lane (see Tick)."""
    personal: bool = True
    """Its work is about a person (a message, a comment, a conversation): its rows and effects carry
    that person's hash, and each costs an index write (the `by_sender` index an erasure queries)."""

    def __post_init__(self) -> None:
        policy = self.policy
        problems = []
        if policy.max_concurrency < 2:
            problems.append("max_concurrency must be >= 2 (the SQS event source minimum)")
        if self.reserved_concurrency < policy.max_concurrency:
            problems.append("reserved_concurrency must be >= max_concurrency")
        if policy.max_receives < 5:
            problems.append("max_receives must be >= 5")
        if policy.batch_size > 10_000:
            problems.append("batch_size must be 1..10000")
        if policy.batch_size > 10 and self.batch_window_seconds < 1:
            problems.append("batch_size > 10 needs a batch window of >= 1 s")
        if not 0 <= self.batch_window_seconds <= 300:
            problems.append("batch_window_seconds must be 0..300")
        if self.visibility_timeout_seconds > SQS_MAX_VISIBILITY_SECONDS:
            problems.append("visibility timeout would exceed SQS's 12 h maximum")
        if problems:
            raise ValueError(f"lane {self.name!r}: " + "; ".join(problems))

    @property
    def name(self) -> str:
        return self.policy.name

    @property
    def visibility_timeout_seconds(self) -> int:
        """AWS's guidance for SQS-triggered functions: six times the function timeout plus the
        batch window, so a message is not redelivered while a retried invocation still holds it."""
        return 6 * self.policy.timeout_seconds + self.batch_window_seconds


MESSAGES = "messages"
ENGAGEMENT = "engagement"
AI = "ai"
BULK = "bulk"
SCHEDULED = "scheduled"

LLM_DEPENDENCY = "llm"


def catalogue() -> tuple[Lane, ...]:
    """Production-shaped lanes. Environments scale or override them (stacks/config/lane_overrides.py)."""
    return (
        Lane(
            policy=LanePolicy(
                name=MESSAGES,
                task="messages",
                objective_seconds=30,
                timeout_seconds=30,
                batch_size=10,
                max_concurrency=20,
                max_receives=5,
                retry=RetryPolicy(base_seconds=2, cap_seconds=60),
                # Storing an inbound message calls nothing a tenant has a share of, so a cap here
                # only costs writes: two lease updates per tenant per batch, the largest CPU cost
                # of the local runtime at 20 webhooks a second.
                tenant_quota=None,
                default_expiry_seconds=None,
                defer_seconds=5,
                service_seconds=0.05,
            ),
            purpose="Inbound WhatsApp/Instagram messages and delivery statuses: interactive, small.",
            memory_mb=512,
            batch_window_seconds=0,
            reserved_concurrency=25,
            traffic=Traffic(peak_per_second=200),
        ),
        Lane(
            policy=LanePolicy(
                name=ENGAGEMENT,
                task="engagement",
                objective_seconds=300,
                timeout_seconds=60,
                # One comment a batch. A batch's records run one after another, each a model call
                # of about 0.3 s, so a batch of B holds its slot for B service times: a quiet
                # page's comment, which the fair queue hands out first, still waits for a slot to
                # finish the batch it holds, up to B service times when the slots are in phase
                # (about B/2 staggered), and a second quiet comment taken in the same batch waits
                # one more. Scenario 1 (2 slots, target 3 service times) measured 6.9, 6.9 and
                # 6.1 at 10; 3.2, 2.9 and 2.8 at 2; 1.4, 1.4 and 0.7 at 1. What a big batch saves
                # is a receive, a delete, an invocation and a drain-count write per comment:
                # `lanectl plan prod` prices the lane at $266.29 a month against $238.03 at 10,
                # $1.72 per million comments, where each comment's own model call costs more
                # than that and the slots it holds are the llm budget.
                batch_size=1,
                max_concurrency=12,
                max_receives=6,
                retry=RetryPolicy(base_seconds=5, cap_seconds=300),
                tenant_quota=None,
                default_expiry_seconds=6 * 3600,
                defer_seconds=30,
                service_seconds=0.3,
                dependency=LLM_DEPENDENCY,
                # At its peak (25 a second over about 8 busy slots) an instance makes some three
                # model calls a second: 20 in a minute is a few seconds of its traffic.
                pause_on_failures=FailureRatePause(window_seconds=60, min_calls=20, failure_share=0.5),
            ),
            purpose="Comment and feed changes: bursty (a post can draw hundreds of comments a "
            "minute), kept off the messages lane so a campaign never delays a customer's message.",
            memory_mb=512,
            # A batch of one is full at its first message: a window would delay nothing.
            batch_window_seconds=0,
            reserved_concurrency=12,
            traffic=Traffic(peak_per_second=25),
        ),
        Lane(
            policy=LanePolicy(
                name=AI,
                task="ai",
                objective_seconds=120,
                timeout_seconds=60,
                batch_size=1,
                max_concurrency=40,
                max_receives=5,
                retry=RetryPolicy(base_seconds=2, cap_seconds=120),
                # The vendor's quota is shared by every tenant: the dependency budget bounds it.
                tenant_quota=None,
                default_expiry_seconds=3600,
                defer_seconds=5,
                service_seconds=4.0,
                dependency=LLM_DEPENDENCY,
                # An unknown send waits up to a minute for WhatsApp's status before it is unanswered.
                task_options=(("debounce_seconds", "4"), ("resolve_seconds", "20"), ("resolve_rounds", "3")),
                # At its peak (6 turns a second over 24 busy slots) an instance makes a model call and
                # a send about every 4 s: 10 of them in two minutes are 40 s of its traffic.
                pause_on_failures=FailureRatePause(window_seconds=120, min_calls=10, failure_share=0.5),
            ),
            purpose="AI reply turns: slow, bound by the model vendor's concurrency quota.",
            memory_mb=512,
            batch_window_seconds=0,
            reserved_concurrency=40,
            traffic=Traffic(peak_per_second=6),
        ),
        Lane(
            policy=LanePolicy(
                name=BULK,
                task="bulk",
                objective_seconds=1800,
                timeout_seconds=300,
                batch_size=5,
                max_concurrency=5,
                max_receives=5,
                retry=RetryPolicy(base_seconds=30, cap_seconds=900),
                tenant_quota=TenantQuota(
                    limit=2,
                    protects="Meta's Graph API rate limit per business account (business use case "
                    "limits): an import's pages call it, and two pages at once stay under it",
                ),
                default_expiry_seconds=24 * 3600,
                defer_seconds=60,
                service_seconds=10.0,
            ),
            purpose="Imports and knowledge syncs in pages: large, patient, never in front of live work.",
            memory_mb=1024,
            batch_window_seconds=20,
            reserved_concurrency=5,
            traffic=Traffic(peak_per_second=0.2, payload_kib=8.0),
            # A tenant's own records (catalogues, knowledge bases); erasures run here too, but rarely.
            personal=False,
        ),
        Lane(
            policy=LanePolicy(
                name=SCHEDULED,
                task="scheduled",
                objective_seconds=60,
                timeout_seconds=10,
                batch_size=10,
                max_concurrency=2,
                max_receives=5,
                retry=RetryPolicy(base_seconds=1, cap_seconds=10),
                tenant_quota=None,
                default_expiry_seconds=60,
                defer_seconds=1,
                service_seconds=0.5,
            ),
            purpose="Periodic ticks (scoring, reminders) from a schedule: a tick that waited out its "
            "cadence is dropped, because the next tick already covers it.",
            memory_mb=256,
            batch_window_seconds=0,
            reserved_concurrency=2,
            traffic=Traffic(peak_per_second=0.2),
            tick=Tick(period_seconds=60, kind="scoring.tick"),
            personal=False,
        ),
    )


__all__ = [
    "AI",
    "BULK",
    "DLQ_RETENTION_DAYS",
    "ENGAGEMENT",
    "LLM_DEPENDENCY",
    "MESSAGES",
    "QUEUE_RETENTION_DAYS",
    "SCHEDULED",
    "BudgetMode",
    "FailureRatePause",
    "Lane",
    "LanePolicy",
    "RetryPolicy",
    "TenantQuota",
    "Tick",
    "Traffic",
    "catalogue",
]
