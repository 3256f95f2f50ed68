"""One consumer instance over the in-memory ports (memory.py), the records it is handed, and what
an operator would read afterwards: used by the test_pipeline_*.py tests."""

from __future__ import annotations

import json
import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pipeline import schema
from pipeline.domain.consumer import marks
from pipeline.domain.consumer.batch import Adapters, Consumer, ConsumerConfig
from pipeline.domain.consumer.outcomes import RecordOutcome
from pipeline.domain.consumer.work import TaskContext, TaskFn, TaskResult
from pipeline.domain.dependencies.budgets import Budget
from pipeline.domain.dependencies.budgets import Mode as BudgetMode
from pipeline.domain.dependencies.failure_rate import FailureWindow, WatchedModel
from pipeline.domain.effects import Put, Table, Update
from pipeline.domain.envelope import Envelope
from pipeline.settings.lane_policy import LanePolicy, RetryPolicy, TenantQuota
from tests.unit.consumer.memory import (
    LANE,
    NOW,
    Hasher,
    MemoryBudgets,
    MemoryCalls,
    MemoryCommitter,
    MemoryDrain,
    MemoryObserver,
    MemoryQueue,
    MemoryStore,
    MemorySwitch,
    NoEraser,
    NoVendor,
)


@dataclass(frozen=True, kw_only=True)
class LaneUnderTest(LanePolicy):
    """A lane policy whose task time limit a test may set apart from the timeout (the real one
    derives it), so the consumer's time rules can be pinned at their edges."""

    time_limit_seconds: float | None = None

    @property
    def task_time_limit_seconds(self) -> float:
        if self.time_limit_seconds is not None:
            return self.time_limit_seconds
        return super().task_time_limit_seconds


def lane_settings(**changes: Any) -> LanePolicy:
    values: dict[str, Any] = {
        "name": LANE,
        "task": "test",
        "objective_seconds": 60,
        "timeout_seconds": 30,
        "max_receives": 5,
        "default_expiry_seconds": None,
        "defer_seconds": 30,
        "max_concurrency": 2,
        "batch_size": 10,
        "service_seconds": 0.1,
    }
    retry = RetryPolicy(changes.pop("retry_base_seconds", 2.0), changes.pop("retry_cap_seconds", 300.0))
    limit, mode = changes.pop("tenant_quota", 0), changes.pop("tenant_quota_mode", "enforce")
    quota = TenantQuota(limit, protects="a test's per-tenant limit", mode=BudgetMode(mode)) if limit else None
    options = changes.pop("options", {})
    values.update(
        retry=retry,
        tenant_quota=quota,
        task_options=tuple(options.items()),
        time_limit_seconds=changes.pop("task_time_limit_seconds", 10.0),
    )
    values.update(changes)
    return LaneUnderTest(**values)


@dataclass
class Clock:
    now: float = NOW

    def __call__(self) -> float:
        return self.now


@dataclass
class Remaining:
    """The invocation's time left: a test's task takes time by lowering `seconds`."""

    seconds: float = 30.0

    def __call__(self) -> float:
        return self.seconds


def done_task(ctx: TaskContext) -> TaskResult:
    return TaskResult(writes=(counter(ctx.envelope.id),), detail={"seen": True})


def counter(name: str) -> Update:
    return Update(
        table=Table.DATA,
        key={schema.PK: f"counter#{name}", schema.SK: "count"},
        expression="ADD #n :by",
        names={"#n": "n"},
        values={":by": 1},
    )


def keyed_put(name: str) -> Put:
    return Put(
        Table.DATA,
        {schema.PK: f"message#{name}", schema.SK: "m"},
        condition="attribute_not_exists(#pk)",
        names={"#pk": schema.PK},
        standalone=True,
    )


@dataclass
class Pipeline:
    """One consumer instance over in-memory ports, and the SQS records it is handed."""

    task: TaskFn = done_task
    lane: LanePolicy = field(default_factory=lane_settings)
    dependency: Budget | None = None
    seed: int = 7
    store: MemoryStore = field(default_factory=MemoryStore)
    queue: MemoryQueue = field(default_factory=MemoryQueue)
    budgets: MemoryBudgets = field(default_factory=MemoryBudgets)
    drain: MemoryDrain = field(default_factory=MemoryDrain)
    observer: MemoryObserver = field(default_factory=MemoryObserver)
    calls: MemoryCalls = field(default_factory=MemoryCalls)
    clock: Clock = field(default_factory=Clock)
    switch: MemorySwitch = field(default_factory=MemorySwitch)
    vendor: Any = field(default_factory=NoVendor)
    failures: FailureWindow | None = None
    """The lane's failure window (domain/dependencies/failure_rate.py), when the test plays a lane that watches one."""
    committer: MemoryCommitter | None = None  # type: ignore[assignment]
    """Shared with another instance to play two consumers racing on one table."""
    consumer: Consumer = field(init=False)
    _sent: int = 0

    def __post_init__(self) -> None:
        self.committer = self.committer or MemoryCommitter(self.store)
        self.consumer = Consumer(
            ConsumerConfig(
                lane=self.lane, dependency=self.dependency, marker_ttl_seconds=3600, effects_retention_seconds=86400
            ),
            self.task,
            Adapters(
                store=self.store,
                reader=self.store,
                budgets=self.budgets,
                committer=self.committer,
                queue=self.queue,
                drain=self.drain,
                observer=self.observer,
                vendor=WatchedModel(self.vendor, self.failures) if self.failures is not None else self.vendor,
                calls=self.calls,
                senders=Hasher(),
                eraser=NoEraser(),  # type: ignore[arg-type]
                switch=self.switch,
                failures=self.failures,
            ),
            clock=self.clock,
            rng=random.Random(self.seed),
        )

    def run(self, records: Sequence[Mapping[str, Any]], remaining: Callable[[], float] | float = 30.0) -> list[str]:
        left = remaining if callable(remaining) else Remaining(remaining)
        return self.consumer.process(records, left)

    # Work, as the door, the jobs API and the scheduler leave it

    def job(
        self, job_id: str, *, tenant: str = "acme", status: str = schema.RowStatus.QUEUED, **fields: Any
    ) -> Envelope:
        envelope_fields = {k: fields.pop(k) for k in ("deadline", "attempt", "deferrals", "kind") if k in fields}
        envelope = Envelope(
            id=job_id,
            lane=self.lane.name,
            tenant=tenant,
            source="job",
            created_at=self.clock.now,
            payload={"n": 1},
            **{"kind": "test", **envelope_fields},
        )
        self.store.put(Table.JOBS, {schema.ID: job_id}, {marks.STATUS: status, **fields})
        return envelope

    def webhook(self, row_id: str, *, tenant: str = "acme", **fields: Any) -> Envelope:
        self.store.put(
            Table.WEBHOOK_LOG,
            {schema.ID: row_id},
            {marks.STATUS: schema.RowStatus.QUEUED, "payload": {"n": 2}, **fields},
        )
        return Envelope(
            id=row_id,
            lane=self.lane.name,
            tenant=tenant,
            kind="whatsapp.messages",
            source="webhook",
            created_at=self.clock.now,
            ref=row_id,
        )

    def tick(self, work_id: str, *, tenant: str = "system", **fields: Any) -> Envelope:
        return Envelope(
            id=work_id,
            lane=self.lane.name,
            tenant=tenant,
            kind="test",
            source="internal",
            created_at=self.clock.now,
            payload={"n": 3},
            **fields,
        )

    def record(self, envelope: Envelope | str, *, receives: int = 1, handle: bool = True) -> dict[str, Any]:
        """The SQS record of one message; a str is a raw body."""
        self._sent += 1
        body = envelope if isinstance(envelope, str) else envelope.to_json()
        return {
            "messageId": f"m-{self._sent}",
            "receiptHandle": f"rh-{self._sent}" if handle else "",
            "body": body,
            "attributes": {"ApproximateReceiveCount": str(receives), "SentTimestamp": str(int(NOW * 1000))},
        }

    # What an operator would see

    def outcome(self, message_id: str) -> RecordOutcome:
        return self.observer.by_id()[message_id]

    def outcomes(self) -> list[str]:
        return [outcome.outcome for _, outcome in self.observer.outcomes]

    def status(self, job_id: str) -> str | None:
        row = self.store.row(Table.JOBS, job_id) or self.store.row(Table.WEBHOOK_LOG, job_id)
        return None if row is None else row[marks.STATUS]

    def dead_bodies(self) -> list[dict[str, Any]]:
        return [json.loads(body) for body, _ in self.queue.dead]

    def effects_of(self, name: str) -> int:
        return sum(1 for w in self.committer.landed if isinstance(w, Update) and w.key[schema.PK] == f"counter#{name}")
