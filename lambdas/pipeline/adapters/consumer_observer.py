"""The consumer's log lines and metrics.

One structured line per record outcome, with `lane`, `tenant`, `outcome`, `attempt`, `kind` and
`id` as top-level fields (a Contributor Insights rule ranks tenants by `outcome` from them).
Dead letters log at CRITICAL: abandoning work must be loud. The per-record counts are taken from
these lines by the log group's metric filters (pipeline/metric_filters.py): `Records` by Lane and
Outcome, `Retried` by Lane and ErrorClass, `Abandoned` by Lane; tenants never become dimensions.
`OutOfTime` by Lane is written as an EMF document, the moment it is known, because an invocation
out of time may be stopped before it could say more; `UnprocessableUnits` by Lane (units of a
delivery skipped because they cannot be stored, from the outcome's `unprocessable` detail) is one
too: it is rare, and a count rather than a line; and `MetaIgnored` by Lane and Ignored (what a
delivery held that its task did not act on, by name: tasks/meta.py) is written as EMF when the
batch's counts are flushed, since a log-line filter cannot take a dimension from a key's name.
So are `RepliesFailed` by Lane and Code (replies Meta reported `failed`, from the messages task's
`replies_failed` detail), with a second series by Lane alone that its alarm reads, and
`ReplyCallbacksRefused` by Lane (statuses whose reply reference did not verify).

An observe-mode budget adds a line with outcome `would_defer` (counted in `Records` too) for a
record it would have deferred; the record's own outcome line still follows, so `would_defer`
counts sit beside the terminal outcomes rather than among them.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import Counter
from collections.abc import Mapping
from typing import Any

from pipeline import metric_names
from pipeline.adapters.observability import MetricUnit
from pipeline.domain.consumer.outcomes import RecordOutcome
from pipeline.domain.consumer.records import Received
from pipeline.domain.dependencies.budgets import Grant
from pipeline.domain.errors import describe
from pipeline.metric_names import Outcome

_LEVELS = {
    Outcome.DEAD_LETTERED: logging.CRITICAL,
    Outcome.RETRIED: logging.WARNING,
    Outcome.NOT_STARTED: logging.WARNING,
    Outcome.CUT_SHORT: logging.WARNING,
}


class ConsumerObserver:
    def __init__(self, logger: Any, metrics: Any, lane: str) -> None:
        self._logger = logger
        self._metrics = metrics
        self._lane = lane
        self._lock = threading.Lock()  # tasks on worker threads report budget observations too
        self._counts: Counter[tuple[str, tuple[tuple[str, str], ...]]] = Counter()

    def _count(self, name: str, value: int = 1, **dimensions: str) -> None:
        with self._lock:
            self._counts[(name, tuple(sorted({metric_names.LANE: self._lane, **dimensions}.items())))] += value

    def model_tokens(self, input_tokens: int, output_tokens: int) -> None:
        if input_tokens:
            self._count(metric_names.MODEL_INPUT_TOKENS, input_tokens)
        if output_tokens:
            self._count(metric_names.MODEL_OUTPUT_TOKENS, output_tokens)

    def _fields(self, received: Received) -> dict[str, Any]:
        """Every record's line: what a dashboard or an on-call search keys on. Values that only
        restate the usual case (first receive, never deferred) are left out: this line is written
        once per record, and at a million webhooks every byte of it is a megabyte of logs."""
        envelope = received.envelope
        waited = None if received.sent_at is None else round(max(0.0, time.time() - received.sent_at), 3)
        fields: dict[str, Any] = {
            "queued_seconds": waited,
            "lane": self._lane,
            "tenant": envelope.tenant if envelope else "",
            "kind": envelope.kind if envelope else "",
            "id": envelope.id if envelope else "",
            "source": envelope.source if envelope else "",
        }
        if received.receive_count != 1:
            fields["receive_count"] = received.receive_count
        if envelope is not None and envelope.deferrals:
            fields["deferrals"] = envelope.deferrals
        return fields

    def outcome(self, received: Received, outcome: RecordOutcome) -> None:
        fields = {**self._fields(received), "outcome": outcome.outcome, "attempt": outcome.attempt}
        if outcome.outcome not in (Outcome.DONE, Outcome.DUPLICATE):
            fields["message_id"] = received.message_id  # finds it in the lane or its DLQ
        if outcome.error is not None:
            fields.update(
                error_class=outcome.error.error_class, reason=outcome.error.reason, error=outcome.error.message
            )
        if outcome.visibility_seconds is not None:
            fields["visibility_seconds"] = outcome.visibility_seconds
        if outcome.defer_seconds is not None:
            fields["defer_seconds"] = outcome.defer_seconds
        detail = {name: value for name, value in outcome.detail.items() if value not in (0, None, "", {})}
        if detail:
            fields["detail"] = detail
        unprocessable = detail.get("unprocessable")
        if isinstance(unprocessable, int) and not isinstance(unprocessable, bool):
            self._count(metric_names.UNPROCESSABLE_UNITS, unprocessable)
        ignored = outcome.detail.get("ignored")
        if isinstance(ignored, Mapping):  # what a Meta delivery held that its task did not act on, by name
            for what, count in ignored.items():
                if isinstance(count, int) and count > 0:
                    self._count(metric_names.META_IGNORED, count, **{metric_names.IGNORED: str(what)})
        self._replies(detail)
        self._logger.log(_LEVELS.get(outcome.outcome, logging.INFO), f"record {outcome.outcome}", extra=fields)

    def _replies(self, detail: Mapping[str, Any]) -> None:
        """What the messages task did to replies: those Meta reported failed, by Meta's code, and
        the references refused (tasks/messages.py)."""
        failed = detail.get("replies_failed")
        if isinstance(failed, Mapping):
            for code, count in failed.items():
                if isinstance(count, int) and count > 0:
                    self._count(metric_names.REPLIES_FAILED, count, **{metric_names.CODE: str(code)})
                    self._count(metric_names.REPLIES_FAILED, count)
        refused = detail.get("callbacks_refused")
        if isinstance(refused, int) and not isinstance(refused, bool):
            self._count(metric_names.REPLY_CALLBACKS_REFUSED, refused)

    def over_budget(self, received: Received, grant: Grant) -> None:
        fields = {
            **self._fields(received),
            "outcome": Outcome.WOULD_DEFER,
            "budget": grant.budget.kind,
            "budget_key": grant.budget.key,
            "limit": grant.budget.limit,
            "over": grant.over,
        }
        self._logger.info("budget would defer (observe mode)", extra=fields)

    def problem(self, message: str, exc: BaseException | None = None, **fields: Any) -> None:
        extra: dict[str, Any] = {"lane": self._lane, **fields}
        if exc is not None:
            # No traceback: its last line is the exception's text, which may quote the payload.
            extra.update(error_class=type(exc).__name__, error=describe(exc))
        self._logger.error(message, extra=extra)

    def lane_paused(self, reason: str) -> None:
        self._logger.error(
            "lane paused: its dependency refuses every record", extra={"lane": self._lane, "reason": reason}
        )
        self._count(metric_names.LANE_PAUSED, 1, **{metric_names.REASON: reason})

    def out_of_time(self, records: int, remaining_seconds: float) -> None:
        self._logger.error(
            "invocation ran out of time before its batch settled",
            extra={"lane": self._lane, "records": records, "remaining_seconds": round(remaining_seconds, 3)},
        )
        self._count(metric_names.OUT_OF_TIME)
        self.flush()

    def flush(self) -> None:
        """One EMF document per dimension set (a document holds one set)."""
        with self._lock:
            by_dimensions: dict[tuple[tuple[str, str], ...], list[tuple[str, int]]] = {}
            for (name, dimensions), total in self._counts.items():
                by_dimensions.setdefault(dimensions, []).append((name, total))
            self._counts = Counter()
            for dimensions, metrics in by_dimensions.items():
                for dimension, dimension_value in dimensions:
                    self._metrics.add_dimension(name=dimension, value=dimension_value)
                for name, count in metrics:
                    self._metrics.add_metric(name=name, unit=MetricUnit.Count, value=count)
                self._metrics.flush_metrics()
