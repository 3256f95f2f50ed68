"""Small tasks for exercising the consumer: each records its calls and returns a known effect."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from pipeline import schema
from pipeline.domain.consumer.work import TaskContext, TaskResult
from pipeline.domain.effects import Put, Table, Update


def counter_write(name: str, by: int = 1) -> Update:
    """An effect that is not idempotent on its own: applied twice, it would count twice."""
    return Update(
        table=Table.DATA,
        key={schema.PK: f"counter#{name}", schema.SK: "count"},
        expression="ADD #n :by",
        names={"#n": "n"},
        values={":by": by},
    )


@dataclass
class Recorder:
    """A task that counts per envelope id; `behaviour` may raise, sleep or wait on events."""

    behaviour: Callable[[TaskContext], None] | None = None
    calls: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def __call__(self, ctx: TaskContext) -> TaskResult:
        with self.lock:
            self.calls.append(ctx.envelope.id)
        if self.behaviour is not None:
            self.behaviour(ctx)
        return TaskResult(writes=(counter_write(ctx.envelope.id),), detail={"seen": True})


@dataclass
class ConcurrencyProbe:
    """A task that holds the dependency budget for `hold` seconds and records the peak number of
    tasks inside the budget at once."""

    hold: float = 0.2
    inside: int = 0
    peak: int = 0
    completed: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def __call__(self, ctx: TaskContext) -> TaskResult:
        with ctx.dependency():
            with self.lock:
                self.inside += 1
                self.peak = max(self.peak, self.inside)
            time.sleep(self.hold)
            with self.lock:
                self.inside -= 1
        with self.lock:
            self.completed.append(ctx.envelope.id)
        return TaskResult(writes=(counter_write("probe"),))


def marker(ctx: TaskContext) -> TaskResult:
    return TaskResult(writes=(Put(Table.DATA, {schema.PK: f"seen#{ctx.envelope.id}", schema.SK: "x"}),))


def counter_value(harness: Any, name: str) -> int:
    item = harness.data(f"counter#{name}", "count")
    return 0 if item is None else int(item["n"])
