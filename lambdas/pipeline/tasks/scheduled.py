"""scheduled lane: periodic ticks (e.g. `scoring.tick`).

A tick that waited out its cadence in a backed-up queue would only repeat the work of the tick
after it, so the lane's default expiry equals the cadence and the consumer drops such ticks
before they get here. A tick that runs records what it did: a score record for its run (kept a
week) and the lane's heartbeat, which only moves forward, so a late tick never makes the
heartbeat look older than it is.
"""

from __future__ import annotations

from pipeline import schema
from pipeline.domain.consumer.work import TaskContext, TaskResult
from pipeline.domain.effects import OnConflict, Put, Table, Update
from pipeline.domain.errors import PermanentError

TICK_SUFFIX = ".tick"
RECORD_TTL_SECONDS = 7 * 24 * 3600


def heartbeat_key(lane: str, kind: str) -> dict[str, str]:
    return {schema.PK: f"heartbeat#{lane}", schema.SK: kind}


def run(ctx: TaskContext) -> TaskResult:
    envelope = ctx.envelope
    if not envelope.kind.endswith(TICK_SUFFIX):
        raise PermanentError("unknown_kind", f"the scheduled lane runs *{TICK_SUFFIX} work, not {envelope.kind}")
    lag = max(0.0, ctx.now - envelope.created_at)
    heartbeat = Update(
        table=Table.DATA,
        key=heartbeat_key(ctx.lane, envelope.kind),
        expression="SET #tick = :tick, #at = :at, #ran = :ran, #lag = :lag",
        condition="attribute_not_exists(#at) OR #at < :at",
        names={"#tick": "last_tick", "#at": "last_tick_at", "#ran": "ran_at", "#lag": "lag_seconds"},
        values={":tick": envelope.id, ":at": envelope.created_at, ":ran": ctx.now, ":lag": round(lag, 3)},
        on_conflict=OnConflict.SKIP,
    )
    record = Put(
        table=Table.DATA,
        item={
            schema.PK: f"tick#{envelope.kind}",
            schema.SK: f"{envelope.created_at:017.3f}#{envelope.id}",
            "tenant": envelope.tenant,
            "ran_at": ctx.now,
            "lag_seconds": round(lag, 3),
            schema.TTL: int(ctx.now) + RECORD_TTL_SECONDS,
        },
    )
    return TaskResult(writes=(heartbeat, record), detail={"lag_seconds": round(lag, 3)})
