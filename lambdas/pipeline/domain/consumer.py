"""The record pipeline every lane's consumer runs: cheap checks first, then the task, then one
commit, and exactly one outcome per record.

Per batch:
1. Parse each record. Not an envelope (or not for this lane) → permanent: to the DLQ with the reason.
2. One consistent BatchGetItem reads every record's obligation (row or done-marker); a webhook
   body travelling by reference comes back in the same read.
   - Row missing → permanent (the row is written before the message, so this is not a race).
   - Already finished → ack as duplicate.
   - Past its deadline, or closer to it than its kind's expected service time (measured by this
     instance, the catalogue's figure until then) → the row is marked expired (with its job
     bookkeeping), no task call.
3. Tenant quota: one conditional UpdateItem per tenant takes as many slots as the tenant has
   records (or as many as are free); the rest are deferred. One update gives them back.
4. Each admitted record, unless the invocation could not finish it, runs its task under the hard
   time limit. The task may hold the lane's dependency budget around its external call;
   exhausted → deferred.
5. Follow-ups are sent, then the task's writes and the done-mark commit as one transaction; or,
   for a queued webhook whose writes are each idempotent by key, those writes alone, each one
   conditional put or update, no transaction and no row write (marks.effect_is_mark).
6. Outcome: success → ack; transient → backoff through the visibility timeout, reported as a
   batch item failure, until attempts reach max receives; permanent (or out of attempts) → DLQ
   with the reason, row marked failed, ack.
At the end, deferrals are re-sent and visibility changes applied in batches of ten.

Time: the consumer takes no further step that calls SQS or DynamoDB for a record (the lookup, an
expiry, a quota, a task and its commit) unless the invocation would still have its settle reserve
left afterwards: enough to re-send what it has not finished, release its leases and report (see
domain/settle_reserve.py). A record it does not take is re-sent untouched, and the original acked,
so it costs no receive. An invocation that ends before its batch settled anyway is reported as
out of time (domain/deadline_watch.py).

Nothing a record does can fail another record, and nothing raises out of `process`: an
unexpected error at batch level returns every record not yet settled to SQS.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from pipeline import schema
from pipeline.domain import budgets as budget_rules
from pipeline.domain import marks, retention, retry, senders
from pipeline.domain import outcomes as out
from pipeline.domain import settle_reserve as reserve_rules
from pipeline.domain.budgets import Budget, Grant, Mode
from pipeline.domain.deadline_watch import DeadlineWatch
from pipeline.domain.effects import TASK_TABLES, Write
from pipeline.domain.envelope import Envelope
from pipeline.domain.errors import Classified, DependencyBusy, PermanentError, TaskTimeout, classify
from pipeline.domain.job_bookkeeping import job_finished
from pipeline.domain.marks import Obligation
from pipeline.domain.outcomes import RecordOutcome
from pipeline.domain.ports import (
    Budgets,
    CallTimes,
    CommitState,
    Committer,
    Drain,
    LaneQueue,
    ObligationStore,
    Observer,
    Reader,
    SenderHasher,
    location_id,
)
from pipeline.domain.records import Received, receive
from pipeline.domain.service_times import ServiceTimes
from pipeline.domain.task_context import TaskRun
from pipeline.domain.time_limit import run_with_limit
from pipeline.domain.work import Eraser, TaskFn, TaskResult, Vendor
from pipeline.metric_names import Outcome
from pipeline.policy.lanes import LanePolicy

LEASE_SLACK_SECONDS = 5.0
"""Added to every lease: covers clock skew between instances and the end-of-batch bookkeeping."""
ERROR_ATTRIBUTE_LIMIT = 256
CHEAP_CHECK_CALLS = 2
"""The most a cheap check calls: a dead letter and its row's mark, or an expiry's commit."""


@dataclass(frozen=True)
class ConsumerConfig:
    lane: LanePolicy
    dependency: Budget | None
    marker_ttl_seconds: int
    effects_retention_seconds: int
    """How long what the tasks write is kept: every write without an expiry of its own gets one."""

    @property
    def reserve_seconds(self) -> float:
        """The least time kept back after a task for its commit and the batch's bookkeeping; more
        when the calls that need it are slow (Consumer._settle_reserve)."""
        return min(1.0, max(0.1, (self.lane.timeout_seconds - self.lane.task_time_limit_seconds) / 2))

    @property
    def least_start_seconds(self) -> float:
        """The shortest time limit worth starting a task under. A record is run under whatever the
        invocation has left (less the reserve), up to its lane's limit; requiring the whole limit
        would let a batch start records only in its first timeout - limit - reserve seconds (one
        second locally, a sixth of the invocation in production) and re-send the rest."""
        full = self.lane.task_time_limit_seconds
        return min(full, max(self.reserve_seconds, full / 10))


@dataclass(frozen=True)
class Adapters:
    store: ObligationStore
    reader: Reader
    budgets: Budgets
    committer: Committer
    queue: LaneQueue
    drain: Drain
    observer: Observer
    vendor: Vendor
    calls: CallTimes
    senders: SenderHasher
    eraser: Eraser


class Consumer:
    def __init__(
        self,
        config: ConsumerConfig,
        task: TaskFn,
        adapters: Adapters,
        *,
        clock: Callable[[], float],
        rng: random.Random,
    ) -> None:
        self._config = config
        self._lane = config.lane
        self._task = task
        self._io = adapters
        self._clock = clock
        self._rng = rng
        self._slowest_before = 0.0
        self._service = ServiceTimes(config.lane.service_seconds)
        """The slowest call of the previous invocation: the first calls of this one may be as slow,
        and the settle's SQS calls are often the first SQS calls of an invocation. An instance
        runs one invocation at a time, as a Lambda execution environment does."""

    # The batch

    def process(self, records: Sequence[Mapping[str, Any]], remaining: Callable[[], float]) -> list[str]:
        """Run one SQS batch; returns the message ids to report in batchItemFailures."""
        self._slowest_before = self._io.calls.restart()
        with DeadlineWatch(remaining, lambda: self._report_out_of_time(len(records), remaining)):
            return self._process(records, remaining)

    def _report_out_of_time(self, records: int, remaining: Callable[[], float]) -> None:
        try:
            self._io.observer.out_of_time(records, max(0.0, remaining()))
        except Exception as exc:  # the watch may run on its own thread, where nobody would see it
            self._io.observer.problem("out of time, and not reported", exc)

    def _process(self, records: Sequence[Mapping[str, Any]], remaining: Callable[[], float]) -> list[str]:
        batch = [receive(record, self._lane.name) for record in records]
        settled: dict[int, RecordOutcome] = {}
        try:
            self._run_batch(batch, settled, remaining)
        except Exception as exc:  # a bug outside any record: whatever is unsettled goes back to SQS
            self._io.observer.problem("batch failed outside any record", exc)
        for index, received in enumerate(batch):
            if index not in settled:
                settled[index] = RecordOutcome(
                    outcome=Outcome.RETRIED,
                    failed=True,
                    error=Classified(True, "Unsettled", "unexpected", "batch failed before this record settled"),
                    attempt=self._attempt(received),
                )
        settled = self._settle_with_sqs(batch, settled)
        drained = 0
        for index, received in enumerate(batch):
            self._io.observer.outcome(received, settled[index])
            drained += settled[index].outcome in out.DRAINED
        try:
            self._io.drain.record(drained, self._clock())
        except Exception as exc:
            self._io.observer.problem("drain count not recorded", exc, drained=drained)
        return [received.message_id for index, received in enumerate(batch) if settled[index].failed]

    def _run_batch(
        self, batch: list[Received], settled: dict[int, RecordOutcome], remaining: Callable[[], float]
    ) -> None:
        live: list[int] = []
        for index, received in enumerate(batch):
            if received.envelope is None:
                # Not gated on time: it has no envelope to re-send, and nothing has used any yet.
                settled[index] = self._dead_letter(received, None, self._malformed(received), received.receive_count)
            else:
                live.append(index)
        if self._left_after(remaining, batch, settled, calls=1) < 0:
            self._not_started(batch, live, settled, remaining)
            return
        obligations = self._obligations(batch, live, settled)
        todo = self._cheap_checks(batch, live, obligations, settled, remaining)
        grants = self._take_tenant_quota(batch, todo, settled, remaining)
        try:
            for index in todo:
                if index in settled:
                    continue
                received = batch[index]
                held = grants.get(received.tenant)
                if held is not None and index in held[1]:
                    settled[index] = self._defer(received, budget_rules.TENANT_QUOTA)
                    continue
                reserve = self._settle_reserve(batch, settled, leases=len(grants), calls=self._record_calls(received))
                settled[index] = self._run_one(received, obligations[index], remaining, reserve)
        finally:
            for grant, _ in grants.values():
                self._io.budgets.release(grant)

    def _obligations(
        self, batch: list[Received], live: list[int], settled: dict[int, RecordOutcome]
    ) -> dict[int, Obligation]:
        located = {index: marks.locate(batch[index].envelope, self._lane.name) for index in live}  # type: ignore[arg-type]
        try:
            found = self._io.store.lookup(list(located.values()))
        except Exception as exc:
            error = classify(exc)
            for index in live:
                settled[index] = self._failed(batch[index], None, error)
            return {}
        return {
            index: Obligation(table, key, found.get(location_id(table, key))) for index, (table, key) in located.items()
        }

    def _cheap_checks(
        self,
        batch: list[Received],
        live: list[int],
        obligations: dict[int, Obligation],
        settled: dict[int, RecordOutcome],
        remaining: Callable[[], float],
    ) -> list[int]:
        """Settles what needs no task; returns the indices that do."""
        now = self._clock()
        todo: list[int] = []
        for index in live:
            if index in settled:
                continue
            short = self._left_after(remaining, batch, settled, calls=CHEAP_CHECK_CALLS) < 0
            outcome = self._cheap_check(batch[index], obligations[index], now, short, remaining)
            if outcome is None:
                todo.append(index)
            else:
                settled[index] = outcome
        return todo

    def _cheap_check(
        self, received: Received, obligation: Obligation, now: float, short: bool, remaining: Callable[[], float]
    ) -> RecordOutcome | None:
        """`short`: too little time left for this check's own calls (a dead letter, an expiry)."""
        envelope = received.envelope
        assert envelope is not None
        attempt = self._attempt(received)
        if obligation.missing_row:
            if short:
                return out.not_started(attempt, remaining())
            error = classify(PermanentError("row_missing", f"{obligation.table} row {envelope.id} does not exist"))
            return self._dead_letter(received, obligation, error, attempt)
        if not obligation.open:
            return out.acked(Outcome.DUPLICATE, attempt, status=obligation.status)
        expires_at = envelope.expires_at(self._lane.default_expiry_seconds)
        # Work that cannot finish before its deadline is dropped now: started, it would spend a
        # slot and its dependency's budget on a result nobody can use.
        if expires_at is not None and expires_at - now < self._service.expected(envelope.kind):
            if short:
                return out.not_started(attempt, remaining())
            return self._expire(received, obligation, attempt, now, time_left=expires_at - now)
        return None

    # Budgets

    def _take_tenant_quota(
        self, batch: list[Received], todo: list[int], settled: dict[int, RecordOutcome], remaining: Callable[[], float]
    ) -> dict[str, tuple[Grant, set[int]]]:
        """Per tenant: the grant, and the batch indices over its quota (deferred when enforced).
        A tenant whose quota there is no time left to take and use has its records not started.
        A lane without a quota takes none: no lease, no release, no write."""
        quota = self._lane.tenant_quota
        if quota is None:
            return {}
        by_tenant: dict[str, list[int]] = {}
        for index in todo:
            by_tenant.setdefault(batch[index].tenant, []).append(index)
        hold = max(0.0, remaining()) + LEASE_SLACK_SECONDS
        grants: dict[str, tuple[Grant, set[int]]] = {}
        for tenant, indices in by_tenant.items():
            # The lease, its release, and then at least one of its records' start.
            calls = 1 + self._record_calls(batch[indices[0]])
            left = self._left_after(remaining, batch, settled, calls=calls, leases=len(grants) + 1)
            if left < self._config.least_start_seconds:
                self._not_started(batch, indices, settled, remaining)
                continue
            budget = budget_rules.tenant_quota(self._lane.name, tenant, quota.limit, quota.mode)
            try:
                grant = self._io.budgets.acquire(budget, len(indices), hold)
            except Exception as exc:
                # Fail open: the counter is down, not the partner's limit it stands for; a burst
                # over it costs that partner's throttling (retried), while failing closed would
                # stop the lane. The task's own commit fails if DynamoDB is down.
                self._io.observer.problem("tenant quota unavailable; proceeding without it", exc, tenant=tenant)
                continue
            # The latest records are the ones over quota: earlier ones keep their place.
            over = indices[len(indices) - grant.over :] if grant.over else []
            if budget.mode is Mode.OBSERVE:
                for index in over:
                    self._io.observer.over_budget(batch[index], grant)
                over = []
            grants[tenant] = (grant, set(over))
        return grants

    # One record

    def _run_one(
        self, received: Received, obligation: Obligation, remaining: Callable[[], float], reserve: float
    ) -> RecordOutcome:
        """`reserve`: the time to keep back for this record's own calls and the batch's settling."""
        envelope = received.envelope
        assert envelope is not None
        attempt = self._attempt(received)
        left = remaining()
        full = self._lane.task_time_limit_seconds
        limit = min(full, left - reserve)
        if limit < self._config.least_start_seconds:
            return out.not_started(attempt, left)
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
                budgets=self._io.budgets,
                dependency=self._config.dependency,
                limit_seconds=limit,
                on_over_budget=lambda grant: self._io.observer.over_budget(received, grant),
                hasher=self._io.senders.hash,
                eraser=self._io.eraser,
            )
            started = self._clock()
            result = run_with_limit(self._task, context, limit, name=f"{self._lane.name}:{envelope.kind}")
            self._service.observe(envelope.kind, self._clock() - started)
        except DependencyBusy:
            return self._defer(received, budget_rules.DEPENDENCY)
        except TaskTimeout as exc:
            if limit < full:
                # Stopped by the end of the invocation, not by its own limit: the record gets
                # another go with its whole limit, and this costs it no attempt.
                return out.cut_short(attempt, limit)
            return self._failed(received, obligation, classify(exc))
        except Exception as exc:
            return self._failed(received, obligation, classify(exc))
        try:
            return self._commit(received, obligation, result, attempt, called_out=context.called_out)
        except Exception as exc:
            return self._failed(received, obligation, classify(exc))

    def _commit(
        self, received: Received, obligation: Obligation, result: TaskResult, attempt: int, *, called_out: bool
    ) -> RecordOutcome:
        envelope = received.envelope
        assert envelope is not None
        strays = sorted({str(write.table) for write in result.writes if write.table not in TASK_TABLES})
        if strays:
            raise PermanentError("task_wrote_obligation", f"a task may not write {', '.join(strays)}")
        now = self._clock()
        effects = retention.stamp(result.writes, retention.expiry(now, self._config.effects_retention_seconds))
        effects = senders.attributed(effects, _sender_of(obligation))
        if marks.effect_is_mark(obligation, result.keyed, called_out):
            applied = self._io.committer.apply(effects)
            outcome = Outcome.DONE if applied.state is CommitState.COMMITTED else Outcome.DUPLICATE
            detail = dict(result.detail)
            if applied.skipped and outcome is Outcome.DONE:
                detail["skipped_writes"] = applied.skipped
            return out.acked(outcome, attempt, **detail)
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
        )
        assert mark is not None  # finishing as done always has a mark
        writes: tuple[Write, ...] = (() if result.superseded else effects) + job_finished(
            envelope, obligation.status, schema.RowStatus.DONE
        )
        committed = self._io.committer.commit(mark, writes)
        outcome = {
            CommitState.COMMITTED: final,
            CommitState.SUPERSEDED: Outcome.SUPERSEDED,
            CommitState.DUPLICATE: Outcome.DUPLICATE,
        }[committed.state]
        detail = dict(result.detail)
        if committed.skipped:
            detail["skipped_writes"] = committed.skipped
        return out.acked(outcome, attempt, **detail)

    # Outcomes with side effects

    def _defer(self, received: Received, budget: str) -> RecordOutcome:
        delay = retry.deferral_delay(self._lane.defer_seconds, self._rng)
        return out.deferred(delay, self._attempt(received), budget)

    def _expire(
        self, received: Received, obligation: Obligation, attempt: int, now: float, *, time_left: float
    ) -> RecordOutcome:
        detail = {"time_left": round(max(0.0, time_left), 3)} if time_left > 0 else {}
        envelope = received.envelope
        assert envelope is not None
        mark = marks.finish(
            obligation,
            envelope,
            status=schema.RowStatus.EXPIRED,
            now=now,
            attempts=attempt,
            marker_ttl_seconds=self._config.marker_ttl_seconds,
        )
        if mark is None:  # internal work: nothing to mark, nobody waiting
            return out.acked(Outcome.EXPIRED, attempt, **detail)
        try:
            committed = self._io.committer.commit(
                mark, job_finished(envelope, obligation.status, schema.RowStatus.EXPIRED)
            )
        except Exception as exc:
            return self._failed(received, obligation, classify(exc))
        if committed.state is CommitState.DUPLICATE:
            return out.acked(Outcome.DUPLICATE, attempt)
        return out.acked(Outcome.EXPIRED, attempt, **detail)

    def _failed(self, received: Received, obligation: Obligation | None, error: Classified) -> RecordOutcome:
        attempt = self._attempt(received)
        if error.transient and attempt < self._lane.max_receives:
            return self._retry(received, obligation, error, attempt)
        if error.transient:
            # Counted across re-sends, which SQS's receive count is not; dead-lettering here also
            # attaches the reason and marks the row, which a silent redrive would do neither of.
            error = replace(error, reason="retries_exhausted")
        return self._dead_letter(received, obligation, error, attempt)

    def _retry(
        self, received: Received, obligation: Obligation | None, error: Classified, attempt: int
    ) -> RecordOutcome:
        backoff = retry.backoff(attempt, self._lane.retry.base_seconds, self._lane.retry.cap_seconds, self._rng)
        if obligation is not None and received.envelope is not None and not obligation.internal and obligation.open:
            note = marks.retry_note(obligation, received.envelope, now=self._clock(), attempts=attempt, error=error)
            try:
                self._io.committer.commit(note, ())
            except Exception as exc:  # the row is a status display here; the message is the retry
                self._io.observer.problem("retry not noted on the row", exc, id=received.envelope.id)
        return out.retried(backoff.seconds, error, attempt, backoff_ceiling=round(backoff.ceiling, 3))

    def _dead_letter(
        self, received: Received, obligation: Obligation | None, error: Classified, attempt: int
    ) -> RecordOutcome:
        envelope = received.envelope
        attributes = {
            "reason": error.reason,
            "error_class": error.error_class,
            "error": error.message[:ERROR_ATTRIBUTE_LIMIT],
            "attempts": str(attempt),
            "lane": self._lane.name,
            "tenant": envelope.tenant if envelope else "",
            "kind": envelope.kind if envelope else "",
            "id": envelope.id if envelope else "",
            "source_message_id": received.message_id,
        }
        try:
            # The original body, unchanged: a redrive replays exactly what arrived.
            self._io.queue.dead_letter(received.body, attributes)
        except Exception as exc:
            # Unable to park it: keep it in the lane, where the receive count still bounds it.
            backoff = retry.backoff(attempt, self._lane.retry.base_seconds, self._lane.retry.cap_seconds, self._rng)
            return out.retried(backoff.seconds, classify(exc), attempt, dead_letter_failed=error.reason)
        if envelope is not None and obligation is not None and obligation.found is not None and obligation.open:
            self._mark_failed(envelope, obligation, error, attempt)
        return out.dead_lettered(error, attempt)

    def _mark_failed(self, envelope: Envelope, obligation: Obligation, error: Classified, attempt: int) -> None:
        mark = marks.finish(
            obligation,
            envelope,
            status=schema.RowStatus.FAILED,
            now=self._clock(),
            attempts=attempt,
            marker_ttl_seconds=self._config.marker_ttl_seconds,
            error=error,
        )
        if mark is None:
            return
        try:
            self._io.committer.commit(mark, job_finished(envelope, obligation.status, schema.RowStatus.FAILED))
        except Exception as exc:  # it is in the DLQ already; the sweeper will see the row pending
            self._io.observer.problem("dead-lettered row not marked failed", exc, id=envelope.id)

    # SQS, once per batch

    def _settle_with_sqs(self, batch: list[Received], settled: dict[int, RecordOutcome]) -> dict[int, RecordOutcome]:
        deferrals = [index for index, outcome in settled.items() if outcome.defer_seconds is not None]
        if deferrals:
            resends: list[tuple[Envelope, int]] = []
            for index in deferrals:
                received = batch[index]
                envelope = received.envelope
                assert envelope is not None
                carried = retry.carried_on_resend(envelope.attempt, received.receive_count)
                resends.append((envelope.deferred().with_attempts(carried), settled[index].defer_seconds or 0))
            try:
                refused = self._io.queue.defer(resends)
            except Exception as exc:
                self._io.observer.problem("deferrals not re-sent", exc, count=len(resends))
                refused = set(range(len(resends)))
            for position in refused:
                index = deferrals[position]
                # Not re-sent, so not acked either: the original comes back after the same delay.
                settled[index] = replace(
                    settled[index], failed=True, visibility_seconds=settled[index].defer_seconds, defer_seconds=None
                )
        changes = [
            (batch[index].receipt_handle, outcome.visibility_seconds)
            for index, outcome in settled.items()
            if outcome.failed and outcome.visibility_seconds is not None and batch[index].receipt_handle
        ]
        if changes:
            try:
                refused_changes = self._io.queue.set_visibility(changes)
            except Exception as exc:
                self._io.observer.problem("visibility not changed; messages return after the queue's timeout", exc)
            else:
                if refused_changes:
                    self._io.observer.problem("some visibility changes were refused", None, refused=refused_changes)
        return settled

    # Time

    def _settle_reserve(
        self, batch: list[Received], settled: dict[int, RecordOutcome], *, calls: int, leases: int
    ) -> float:
        """The time to keep for `calls` more calls and then the batch's settling, were nothing
        else taken: every record not yet settled would be re-sent."""
        unsettled = len(batch) - len(settled)
        resends = unsettled + sum(1 for outcome in settled.values() if outcome.defer_seconds is not None)
        # One more than so far: whatever is taken next may fail.
        changes = 1 + sum(1 for o in settled.values() if o.failed and o.visibility_seconds is not None)
        total = calls + reserve_rules.settle_calls(resends=resends, visibility_changes=changes, releases=leases)
        per_call = reserve_rules.per_call_seconds(self._slowest_before, self._io.calls.slowest())
        return max(self._config.reserve_seconds, reserve_rules.seconds_for(total, per_call))

    def _left_after(
        self,
        remaining: Callable[[], float],
        batch: list[Received],
        settled: dict[int, RecordOutcome],
        *,
        calls: int,
        leases: int = 0,
    ) -> float:
        return remaining() - self._settle_reserve(batch, settled, calls=calls, leases=leases)

    def _not_started(
        self,
        batch: list[Received],
        indices: Sequence[int],
        settled: dict[int, RecordOutcome],
        remaining: Callable[[], float],
    ) -> None:
        left = remaining()
        for index in indices:
            if index not in settled:
                settled[index] = out.not_started(self._attempt(batch[index]), left)

    @staticmethod
    def _record_calls(received: Received) -> int:
        # Its payload's read when another row holds it; then two after the task: follow-ups and
        # the commit, or a retry note, or a dead letter and its row's mark.
        envelope = received.envelope
        by_reference = envelope is not None and envelope.ref is not None and envelope.ref != envelope.id
        return int(by_reference) + 2

    # Small helpers

    def _attempt(self, received: Received) -> int:
        carried = received.envelope.attempt if received.envelope else 0
        return retry.attempt_number(carried, received.receive_count)

    @staticmethod
    def _malformed(received: Received) -> Classified:
        error = classify(PermanentError("malformed", received.problem or "not an envelope"))
        return replace(error, error_class="MalformedEnvelope")


def _sender_of(obligation: Obligation) -> str | None:
    """The one person the record's row is about (the door's or the jobs API's index key), if any."""
    found = obligation.found
    value = None if found is None or obligation.internal else found.get(schema.SENDER_HASH)
    return value if senders.is_hash(value) else None
