"""The lanes' work: plain functions, one per catalogue task name (`Lane.task`).

Each is `run(ctx: TaskContext) -> TaskResult` (see domain/consumer/work.py): it reads, may call the
lane's model, and returns its writes for the consumer to commit with the done-mark.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from pipeline.domain.consumer.work import TaskFn
from pipeline.tasks import ai, bulk, engagement, messages, scheduled

TASKS: Mapping[str, TaskFn] = MappingProxyType(
    {
        "messages": messages.run,
        "engagement": engagement.run,
        "ai": ai.run,
        "scheduled": scheduled.run,
        "bulk": bulk.run,
    }
)


class UnknownTask(KeyError):
    pass


def task_for(name: str, registry: Mapping[str, TaskFn] = TASKS) -> TaskFn:
    try:
        return registry[name]
    except KeyError:
        raise UnknownTask(f"no task {name!r}; tasks: {', '.join(sorted(registry))}") from None
