"""One admitted record's task, run under its time limit, and the one commit of what it wrote.

Steps 4 and 5 in domain/consumer/batch.py's overview: the task may hold the lane's dependency budget
around its external call (exhausted → deferred); then follow-ups are sent, and the task's writes
and the done-mark commit as one transaction, or, for a queued webhook whose writes are each
idempotent by key, those writes alone (marks.effect_is_mark).

A commit is as many calls as its writes make (domain/consumer/commit_plan.py: one a write, or one a
hundred), not one: each is made only while the invocation would still have its settle reserve
afterwards (`room`). A commit that does not fit stops between calls and the record continues in a
re-sent copy, at once and at no cost in attempts, carrying how many writes landed; the copy runs
the task again and commits from there. So a delivery of thousands of units finishes over a few
invocations instead of timing out in each until the DLQ takes it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from pipeline import schema
from pipeline.domain import retention, senders
from pipeline.domain.consumer import attribution, commit_plan, expiries, generations, marks
from pipeline.domain.consumer import outcomes as out
from pipeline.domain.consumer.config import Adapters, ConsumerConfig
from pipeline.domain.consumer.marks import Obligation
from pipeline.domain.consumer.outcomes import RecordOutcome
from pipeline.domain.consumer.records import Received
from pipeline.domain.consumer.service_times import ServiceTimes
from pipeline.domain.consumer.settling import Settler, attempt_of
from pipeline.domain.consumer.task_context import TaskRun
from pipeline.domain.consumer.time_limit import run_with_limit
from pipeline.domain.consumer.work import TaskFn, TaskResult
from pipeline.domain.dependencies import budgets as budget_rules
from pipeline.domain.dependencies.meta_send import Sent
from pipeline.domain.effects import TASK_TABLES, OnConflict, Put, Update, Write
from pipeline.domain.errors import DependencyBusy, MoreToDo, PermanentError, TaskTimeout, classify
from pipeline.domain.jobs.bookkeeping import job_finished
from pipeline.domain.ports import CommitState
from pipeline.metric_names import Outcome


class TaskStep:
    def __init__(
        self,
        config: ConsumerConfig,
        task: TaskFn,
        adapters: Adapters,
        *,
        clock: Callable[[], float],
        service: ServiceTimes,
        settle: Settler,
    ) -> None:
        self._config = config
        self._lane = config.lane
        self._task = task
        self._io = adapters
        self._clock = clock
        self._service = service
        self._settle = settle

    def run(
        self,
        received: Received,
        obligation: Obligation,
        remaining: Callable[[], float],
        reserve: float,
        room: Callable[[], bool] | None = None,
    ) -> RecordOutcome:
        """`reserve`: the time to keep back for this record's own calls and the batch's settling;
        `room`: whether there is time for one more call of its commit (by default, whether the
        reserve is still left)."""
        envelope = received.envelope
        assert envelope is not None
        attempt = attempt_of(received)
        left = remaining()
        full = self._lane.task_time_limit_seconds
        limit = min(full, left - reserve)
        if limit < self._config.least_start_seconds:
            return out.not_started(attempt, left)
        spent: list[TaskRun] = []
        has_room = room or (lambda: remaining() >= reserve)
        try:
            return self._run(received, obligation, attempt, limit, full, spent, has_room)
        finally:
            # Tokens are spent once the model answered, whatever becomes of the record.
            for context in spent:
                if context.input_tokens or context.output_tokens:
                    self._io.observer.model_tokens(context.input_tokens, context.output_tokens)

    def _run(
        self,
        received: Received,
        obligation: Obligation,
        attempt: int,
        limit: float,
        full: float,
        spent: list[TaskRun],
        room: Callable[[], bool],
    ) -> RecordOutcome:
        envelope = received.envelope
        assert envelope is not None
        try:
            payload = self._io.store.payload(envelope, obligation.found)
            context = TaskRun(
                envelope=envelope,
                payload=payload,
                lane=self._lane.name,
                options=self._lane.options,
                now=self._clock(),
                vendor=self._io.vendor,
                reader=self._io.reader,
                meta=self._io.meta or _NO_SENDER,
                callbacks=self._io.callbacks or _NO_CALLBACKS,
                write_now=self._write_now,
                budgets=self._io.budgets,
                dependency=self._config.dependency,
                limit_seconds=limit,
                on_over_budget=lambda grant: self._io.observer.over_budget(received, grant),
                hasher=self._io.senders.hash,
                eraser=self._io.eraser,
                row_names_everyone=_names_everyone(obligation),
                rates=self._io.rates,
                send_per_second=self._config.send_per_second,
                model_rate=self._config.model_rate,
                assets=self._config.assets,
                auto_reply=self._config.auto_reply,
            )
            spent.append(context)
            started = self._clock()
            result = run_with_limit(self._task, context, limit, name=f"{self._lane.name}:{envelope.kind}")
            self._service.observe(envelope.kind, self._clock() - started)
        except DependencyBusy as busy:
            return self._settle.defer(received, busy.deferral or budget_rules.DEPENDENCY)
        except MoreToDo as more:
            return self._settle.defer(received, out.CONTINUES, more.progress)
        except TaskTimeout as exc:
            if limit < full:
                # Stopped by the end of the invocation, not by its own limit: the record gets
                # another go with its whole limit, and this costs it no attempt.
                return out.cut_short(attempt, limit)
            return self._settle.failed(received, obligation, classify(exc))
        except Exception as exc:
            return self._settle.failed(received, obligation, classify(exc))
        try:
            committed = self._commit(
                received,
                obligation,
                result,
                attempt,
                called_out=context.called_out,
                room=room,
            )
        except Exception as exc:
            return self._settle.failed(received, obligation, classify(exc))
        return _with_tokens(committed, context)

    def _write_now(self, write: Write) -> bool:
        if not isinstance(write, Update | Put) or write.on_conflict is not OnConflict.SKIP:
            raise PermanentError("bad_write_now", "write_now applies one Put or Update that skips on conflict")
        stamped = expiries.stamp(
            (replace(write, standalone=True),), retention.expiry(self._clock(), self._config.effects_retention_seconds)
        )
        return self._io.committer.apply(stamped).skipped == 0

    def _commit(
        self,
        received: Received,
        obligation: Obligation,
        result: TaskResult,
        attempt: int,
        *,
        called_out: bool,
        room: Callable[[], bool],
    ) -> RecordOutcome:
        envelope = received.envelope
        assert envelope is not None
        strays = sorted({str(write.table) for write in result.writes if write.table not in TASK_TABLES})
        if strays:
            raise PermanentError("task_wrote_obligation", f"a task may not write {', '.join(strays)}")
        now = self._clock()
        effects = expiries.stamp(result.writes, retention.expiry(now, self._config.effects_retention_seconds))
        effects = attribution.attributed(effects, _sender_of(obligation))
        effects = generations.stamp(effects, envelope.generation)
        if marks.effect_is_mark(obligation, result.keyed, called_out):
            start = commit_plan.resume_point(envelope.progress, effects)
            applied = self._io.committer.apply(effects, resume_from=start, room=room)
            if applied.state is CommitState.PARTIAL:
                return _continues(envelope.progress, effects, applied.done, attempt)
            outcome = Outcome.DONE if applied.state is CommitState.COMMITTED else Outcome.DUPLICATE
            detail = dict(result.detail)
            if applied.skipped and outcome is Outcome.DONE:
                detail["skipped_writes"] = applied.skipped
            return out.finished(outcome, attempt, detail)
        if result.follow_ups:
            self._io.queue.send(result.follow_ups)
        final = Outcome.SUPERSEDED if result.superseded else Outcome.DONE
        mark = marks.finish(
            obligation,
            envelope,
            status=schema.RowStatus.DONE,
            now=now,
            attempts=attempt,
            marker_ttl_seconds=self._config.marker_ttl_seconds,
            outcome=final,
            result=result.result,
        )
        assert mark is not None  # finishing as done always has a mark
        writes: tuple[Write, ...] = (() if result.superseded else effects) + job_finished(
            envelope, obligation.status, schema.RowStatus.DONE
        )
        ahead, _ = commit_plan.plan(writes)
        start = commit_plan.resume_point(envelope.progress, ahead)
        committed = self._io.committer.commit(mark, writes, resume_from=start, room=room)
        if committed.state is CommitState.PARTIAL:
            return _continues(envelope.progress, ahead, committed.done, attempt)
        outcome = {
            CommitState.COMMITTED: final,
            CommitState.SUPERSEDED: Outcome.SUPERSEDED,
            CommitState.DUPLICATE: Outcome.DUPLICATE,
        }[committed.state]
        detail = dict(result.detail)
        if committed.skipped:
            detail["skipped_writes"] = committed.skipped
        return out.finished(outcome, attempt, detail)


def _continues(progress: Mapping[str, Any] | None, writes: Sequence[Write], done: int, attempt: int) -> RecordOutcome:
    """Re-sent at once, carrying how many of `writes` landed: the copy commits the rest."""
    outcome = out.deferred(0, attempt, out.CONTINUES, commit_plan.progress_after(progress, writes, done))
    return replace(outcome, detail={**outcome.detail, "committed_writes": done, "writes": len(writes)})


def _names_everyone(obligation: Obligation) -> bool:
    """Whether the record's webhook row carries every named person's hash (the door's `sender_hashes`)."""
    return obligation.found is not None and not obligation.internal and schema.SENDER_HASHES in obligation.found


def _sender_of(obligation: Obligation) -> str | None:
    """The one person the record's row is about (the door's or the jobs API's index key), if any."""
    found = obligation.found
    value = None if found is None or obligation.internal else found.get(schema.SENDER_HASH)
    return value if senders.is_hash(value) else None


def _with_tokens(outcome: RecordOutcome, context: TaskRun) -> RecordOutcome:
    """The record's line says what its model calls cost (the consumer's line per record)."""
    if not (context.input_tokens or context.output_tokens):
        return outcome
    detail = {
        **outcome.detail,
        "model_input_tokens": context.input_tokens,
        "model_output_tokens": context.output_tokens,
    }
    return dataclasses.replace(outcome, detail=detail)


class _NoSender:
    def send(self, *_: object, **__: object) -> Sent:
        raise PermanentError("no_sender", "this lane is deployed without Meta's send settings")


_NO_SENDER = _NoSender()


class _NoCallbacks:
    """A lane deployed without the reply callback key: it signs nothing, and no status it reads
    moves a reply."""

    def sign(self, *_: object) -> str:
        raise PermanentError("no_callback_key", "this lane is deployed without the reply callback key")

    def verify(self, *_: object) -> None:
        return None


_NO_CALLBACKS = _NoCallbacks()
