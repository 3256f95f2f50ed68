"""The record pipeline every lane's consumer runs: cheap checks first, then the task, then one
commit, and exactly one outcome per record.

Per batch (the steps docs/ARCHITECTURE.md numbers the same way):
1. Parse each record. Not an envelope (or not for this lane) → permanent: to the DLQ with the reason.
2. One consistent BatchGetItem reads every record's obligation (row or done-marker); a webhook
   body travelling by reference comes back in the same read.
   - Row missing → permanent (the row is written before the message, so this is not a race).
   - Already finished → ack as duplicate.
3. Cheap checks and deadlines, no task call:
   - The row's retention (`expires_at`) has run out → marked expired: a redrive after its TTL must
     not store its person's data again.
   - Past its deadline, or closer to it than its kind's expected service time (measured by this
     instance, the catalogue's figure until then) → the row is marked expired (with its job
     bookkeeping).
4. Tenant quota: one conditional UpdateItem per tenant takes one slot of its cap, under which the
   tenant's records in the batch run one after another (a batch's records always do), so a slot
   is one record running at a time however many the batch holds. Only a tenant whose every slot
   is held by other invocations has its records deferred, all of them. One update gives it back.
5. Each admitted record, unless the invocation could not finish it, runs its task under the hard
   time limit. The task may hold the lane's dependency budget around its external call;
   exhausted → deferred.
6. Follow-ups are sent, then the task's writes and the done-mark commit as one transaction; or,
   for a queued webhook whose writes are each idempotent by key, those writes alone, each one
   conditional put or update, no transaction and no row write (marks.effect_is_mark).
7. Outcome: success → ack; transient → backoff through the visibility timeout, reported as a
   batch item failure, until attempts reach max receives; permanent (or out of attempts) → DLQ
   with the reason, row marked failed, ack.
At the end, deferrals are re-sent and visibility changes applied in batches of ten.

Time: the consumer takes no further step that calls SQS or DynamoDB for a record (the lookup, an
expiry, a quota, a task and its commit) unless the invocation would still have its settle reserve
left afterwards: enough to re-send what it has not finished, release its leases and report (see
domain/consumer/settle_reserve.py, priced per batch by domain/consumer/batch_time.py). A record it does not take is
re-sent untouched, and the original acked, so it costs no receive. An invocation that ends before
its batch settled anyway is reported as out of time (domain/consumer/deadline_watch.py).

Nothing a record does can fail another record, and nothing raises out of `process`: an
unexpected error at batch level returns every record not yet settled to SQS.

This module runs the batch (steps 1-4); one record's task and commit (5-6) are
domain/consumer/task_step.py, the outcomes that write and the end-of-batch SQS calls (7) are
domain/consumer/settling.py.
"""

from __future__ import annotations

import functools
import random
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from pipeline import schema
from pipeline.domain.consumer import marks
from pipeline.domain.consumer import outcomes as out
from pipeline.domain.consumer.batch_time import BatchTime
from pipeline.domain.consumer.config import Adapters, ConsumerConfig
from pipeline.domain.consumer.deadline_watch import DeadlineWatch
from pipeline.domain.consumer.marks import Obligation
from pipeline.domain.consumer.outcomes import RecordOutcome
from pipeline.domain.consumer.ports import location_id
from pipeline.domain.consumer.records import Received, receive
from pipeline.domain.consumer.service_times import ServiceTimes
from pipeline.domain.consumer.settling import Settler, attempt_of, malformed
from pipeline.domain.consumer.task_step import TaskStep
from pipeline.domain.consumer.work import TaskFn
from pipeline.domain.dependencies import budgets as budget_rules
from pipeline.domain.dependencies.budgets import Grant, Mode
from pipeline.domain.dependencies.lane_pause import PauseNotMarked
from pipeline.domain.errors import Classified, PermanentError, classify
from pipeline.metric_names import Outcome

__all__ = ["Adapters", "Consumer", "ConsumerConfig"]

LEASE_SLACK_SECONDS = 5.0
"""Added to every lease: covers clock skew between instances and the end-of-batch bookkeeping."""
CHEAP_CHECK_CALLS = 2
"""The most a cheap check calls: a dead letter and its row's mark, or an expiry's commit."""


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
        self._io = adapters
        self._clock = clock
        self._service = ServiceTimes(config.lane.service_seconds)
        self._time = BatchTime(config, adapters.calls)
        self._settle = Settler(config, adapters, clock=clock, rng=rng)
        self._task_step = TaskStep(config, task, adapters, clock=clock, service=self._service, settle=self._settle)

    # The batch

    def process(self, records: Sequence[Mapping[str, Any]], remaining: Callable[[], float]) -> list[str]:
        """Run one SQS batch; returns the message ids to report in batchItemFailures."""
        self._time.restart()
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
                    attempt=attempt_of(received),
                )
        settled = self._settle.settle_with_sqs(batch, settled)
        self._pause_if_refused(settled.values())
        drained = 0
        for index, received in enumerate(batch):
            self._io.observer.outcome(received, settled[index])
            drained += settled[index].outcome in out.DRAINED
        try:
            self._io.drain.record(drained, self._clock())
        except Exception as exc:
            self._io.observer.problem("drain count not recorded", exc, drained=drained)
        return [received.message_id for index, received in enumerate(batch) if settled[index].failed]

    def _pause_if_refused(self, outcomes: Iterable[RecordOutcome]) -> None:
        """Once per batch, after its records are safely back in the lane: a record whose
        dependency refuses the lane itself (Classified.stops_lane), or a dependency failing most
        of this instance's calls (domain/dependencies/failure_rate.py), stops the lane taking work."""
        reasons = {o.error.reason for o in outcomes if o.error is not None and o.error.stops_lane}
        if self._io.failures is not None:
            reasons.update(self._io.failures.tripped())
        if not reasons:
            return
        for reason in sorted(reasons):
            self._io.observer.lane_paused(reason)
        if self._io.failures is not None:
            self._io.failures.forget()
        if self._io.switch is None:
            return
        try:
            self._io.switch.pause(sorted(reasons)[0])
        except PauseNotMarked as exc:
            self._io.observer.problem("lane paused without its mark: the probe will not resume it", exc)
        except Exception as exc:  # its records are held without spending attempts all the same
            self._io.observer.problem("lane not paused", exc, reasons=sorted(reasons))

    def _run_batch(
        self, batch: list[Received], settled: dict[int, RecordOutcome], remaining: Callable[[], float]
    ) -> None:
        live: list[int] = []
        for index, received in enumerate(batch):
            if received.envelope is None:
                # Not gated on time: it has no envelope to re-send, and nothing has used any yet.
                settled[index] = self._settle.dead_letter(received, None, malformed(received), received.receive_count)
            else:
                live.append(index)
        live = _first_copies(batch, live, settled)
        if self._time.left_after(remaining, batch, settled, calls=1) < 0:
            self._time.not_started(batch, live, settled, remaining)
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
                    settled[index] = self._settle.defer(received, budget_rules.TENANT_QUOTA)
                    continue
                calls = BatchTime.record_calls(received)
                reserve = self._time.settle_reserve(batch, settled, leases=len(grants), calls=calls)
                room = functools.partial(self._room, remaining, batch, settled, len(grants))
                settled[index] = self._task_step.run(received, obligations[index], remaining, reserve, room)
        finally:
            for grant, _ in grants.values():
                self._io.budgets.release(grant)

    def _room(
        self, remaining: Callable[[], float], batch: list[Received], settled: dict[int, RecordOutcome], leases: int
    ) -> bool:
        """Time for one more call of a record's commit, then the batch's settling (the record
        re-sent among it, were it stopped there)."""
        return self._time.left_after(remaining, batch, settled, calls=1, leases=leases) >= 0

    def _obligations(
        self, batch: list[Received], live: list[int], settled: dict[int, RecordOutcome]
    ) -> dict[int, Obligation]:
        located = {index: marks.locate(batch[index].envelope, self._lane.name) for index in live}  # type: ignore[arg-type]
        try:
            found = self._io.store.lookup(list(located.values()))
        except Exception as exc:
            error = classify(exc)
            for index in live:
                settled[index] = self._settle.failed(batch[index], None, error)
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
            short = self._time.left_after(remaining, batch, settled, calls=CHEAP_CHECK_CALLS) < 0
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
        attempt = attempt_of(received)
        if obligation.missing_row:
            if short:
                return out.not_started(attempt, remaining())
            error = classify(PermanentError("row_missing", f"{obligation.table} row {envelope.id} does not exist"))
            return self._settle.dead_letter(received, obligation, error, attempt)
        if not obligation.open_to(envelope.generation):
            return out.acked(Outcome.DUPLICATE, attempt, status=obligation.status)
        if _retention_over(obligation, now):
            # A redrive (or a late copy) of a row past its retention: TTL was due to delete it,
            # and running its task would store the person's data for another effects retention.
            if short:
                return out.not_started(attempt, remaining())
            return self._settle.expire(received, obligation, attempt, now, time_left=0.0)
        expires_at = envelope.expires_at(self._lane.default_expiry_seconds)
        # Work that cannot finish before its deadline is dropped now: started, it would spend a
        # slot and its dependency's budget on a result nobody can use.
        if expires_at is not None and expires_at - now < self._service.expected(envelope.kind):
            if short:
                return out.not_started(attempt, remaining())
            return self._settle.expire(received, obligation, attempt, now, time_left=expires_at - now)
        return None

    # Budgets

    def _take_tenant_quota(
        self, batch: list[Received], todo: list[int], settled: dict[int, RecordOutcome], remaining: Callable[[], float]
    ) -> dict[str, tuple[Grant, set[int]]]:
        """Per tenant: the grant, and the batch indices over its quota (deferred when enforced).

        One slot per tenant, whatever the number of its records: this invocation runs them one
        after another, so it never runs more than one of them at once, and a slot per record would
        hold slots no record uses (and defer a lone tenant's records past its cap with nobody else
        waiting). So at most `limit` invocations work on a tenant at once, and a tenant's records
        are over its quota, all of them, only when every slot is held by other invocations.
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
            calls = 1 + BatchTime.record_calls(batch[indices[0]])
            left = self._time.left_after(remaining, batch, settled, calls=calls, leases=len(grants) + 1)
            if left < self._config.least_start_seconds:
                self._time.not_started(batch, indices, settled, remaining)
                continue
            budget = budget_rules.tenant_quota(self._lane.name, tenant, quota.limit, quota.mode)
            try:
                grant = self._io.budgets.acquire(budget, 1, hold)
            except Exception as exc:
                # Fail open: the counter is down, not the partner's limit it stands for; a burst
                # over it costs that partner's throttling (retried), while failing closed would
                # stop the lane. The task's own commit fails if DynamoDB is down.
                self._io.observer.problem("tenant quota unavailable; proceeding without it", exc, tenant=tenant)
                continue
            over = indices if grant.over else []
            if budget.mode is Mode.OBSERVE:
                for index in over:
                    self._io.observer.over_budget(batch[index], grant)
                over = []
            grants[tenant] = (grant, set(over))
        return grants


def _retention_over(obligation: Obligation, now: float) -> bool:
    if obligation.internal or obligation.found is None:
        return False
    expires_at = obligation.found.get(schema.TTL)
    return expires_at is not None and float(expires_at) <= now


def _first_copies(batch: list[Received], live: list[int], settled: dict[int, RecordOutcome]) -> list[int]:
    """The first copy of each envelope in the batch; later copies are settled as duplicates.

    Two copies of one envelope in a batch (a producer's SDK retry of a SendMessage that had
    succeeded, SQS's own at-least-once) would both find its obligation open, both run its task
    (a model call each) and only the second's commit would find the first's. Acking the later copy
    loses nothing: the first is settled in this batch, or its message comes back."""
    first: list[int] = []
    seen: set[tuple[str, int]] = set()
    for index in live:
        envelope = batch[index].envelope
        assert envelope is not None
        copy = (envelope.id, envelope.generation)
        if copy in seen:
            settled[index] = out.acked(Outcome.DUPLICATE, attempt_of(batch[index]))
        else:
            seen.add(copy)
            first.append(index)
    return first
