"""What happened to one record, and what that asks of SQS.

Every record of a batch ends with exactly one of these. Only three shapes touch the queue after
the record's own processing: a deferral (re-send with a delay, then ack), a failure (left in the
queue, optionally with a new visibility), and an ack (everything else: Lambda deletes it).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from pipeline.domain.errors import Classified
from pipeline.metric_names import Outcome


@dataclass(frozen=True)
class RecordOutcome:
    outcome: str
    """A metric_names.Outcome value."""
    failed: bool = False
    """Reported in batchItemFailures: SQS keeps the message and counts the receive."""
    visibility_seconds: int | None = None
    """For a failure: when the message should be received again (None leaves the queue's)."""
    defer_seconds: int | None = None
    """For a deferral: the re-sent copy's DelaySeconds."""
    error: Classified | None = None
    attempt: int = 0
    detail: Mapping[str, Any] = field(default_factory=dict)
    progress: Mapping[str, Any] | None = None
    """For a deferral of a task that had more to do: what the re-sent copy carries."""


DRAINED = frozenset({Outcome.DONE, Outcome.DUPLICATE, Outcome.SUPERSEDED, Outcome.EXPIRED, Outcome.DEAD_LETTERED})
"""Outcomes that take a message off the lane for good: what the jobs API's drain rate counts."""


def acked(outcome: str, attempt: int, **detail: Any) -> RecordOutcome:
    return RecordOutcome(outcome=outcome, attempt=attempt, detail=detail)


def finished(outcome: str, attempt: int, detail: Mapping[str, Any]) -> RecordOutcome:
    """`acked` for a task's own detail, passed whole: its keys are the task's to choose (a reply
    send reports its `attempt`), so none may collide with the outcome's own fields."""
    return RecordOutcome(outcome=outcome, attempt=attempt, detail=dict(detail))


def deferred(seconds: int, attempt: int, budget: str, progress: Mapping[str, Any] | None = None) -> RecordOutcome:
    """`budget`: why (a budget's kind, or CONTINUES for a task with more to do)."""
    return RecordOutcome(
        outcome=Outcome.DEFERRED, defer_seconds=seconds, attempt=attempt, detail={"budget": budget}, progress=progress
    )


CONTINUES = "continues"
"""A deferral's reason when the task itself had more to do (errors.MoreToDo)."""


def retried(visibility_seconds: int, error: Classified, attempt: int, **detail: Any) -> RecordOutcome:
    return RecordOutcome(
        outcome=Outcome.RETRIED,
        failed=True,
        visibility_seconds=visibility_seconds,
        error=error,
        attempt=attempt,
        detail=detail,
    )


def dead_lettered(error: Classified, attempt: int, **detail: Any) -> RecordOutcome:
    return RecordOutcome(outcome=Outcome.DEAD_LETTERED, error=error, attempt=attempt, detail=detail)


def not_started(attempt: int, remaining_seconds: float) -> RecordOutcome:
    # Nothing went wrong with the record: this invocation ran out of time before it could start.
    # It is re-sent at once like a deferral (its attempts carried, none added) and the original
    # acked. Failing it back to SQS instead would spend a receive each time, and a lane whose
    # batches routinely outlast the invocation would walk never-tried work into its DLQ.
    return RecordOutcome(
        outcome=Outcome.NOT_STARTED,
        defer_seconds=0,
        attempt=attempt,
        detail={"remaining_seconds": round(remaining_seconds, 3)},
    )


def cut_short(attempt: int, limit_seconds: float) -> RecordOutcome:
    # The task started with less than its lane's limit (all the invocation had left) and needed
    # more. That says nothing against the record: it is re-sent like one that could not start.
    return RecordOutcome(
        outcome=Outcome.CUT_SHORT,
        defer_seconds=0,
        attempt=attempt,
        detail={"limit_seconds": round(limit_seconds, 3)},
    )
