"""moto keeps every model object it ever made; the emulator's per-message ones it must not.

Every moto model class records each instance in a class-level list (for moto's dashboard and a
reset), so an item deleted from a table, a message deleted from a queue or a metric datum
trimmed away stays referenced for the life of the process. Under `make soak` that was the runtime's
memory growing about 15 KB a webhook with the tables' contents bounded by their TTL. The classes
made per request are left out of that list here; everything else is still tracked, and moto's
dashboard no longer lists the items, messages and datums themselves (the tables, queues and
metrics are still listed).
"""

from __future__ import annotations

from typing import Any

_PATCHED = False


def untracked_classes() -> tuple[type, ...]:
    from moto.cloudwatch.models import MetricAggregatedDatum, MetricDatum
    from moto.dynamodb.models.dynamo_type import Item
    from moto.sqs.models import Message

    return (Item, Message, MetricDatum, MetricAggregatedDatum)


def install() -> None:
    global _PATCHED
    if _PATCHED:
        return
    from moto.core.common_models import BaseModel

    untracked = frozenset(untracked_classes())
    tracked_new = BaseModel.__new__

    def __new__(cls: type, *args: Any, **kwargs: Any) -> Any:
        if cls in untracked:
            return super(BaseModel, cls).__new__(cls)  # type: ignore[misc]
        return tracked_new(cls, *args, **kwargs)  # type: ignore[call-arg]

    BaseModel.__new__ = __new__  # type: ignore[method-assign,assignment]
    for cls in untracked:
        cls.instances_tracked = []  # type: ignore[attr-defined]
    _PATCHED = True
