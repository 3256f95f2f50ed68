"""The obligation behind each record, and the writes that finish it.

Work from a webhook or a job has a row (the obligation, written before its message was sent);
internal work (schedule ticks, reply turns) has none, so its done-marker lives in the state
table. A record is finished by one conditional write, committed with the task's effects:

- a row moves from the status the consumer read to a terminal one (compare-and-set on
  `status`), leaving the pending index (`pending_shard` removed) in the same write;
- an internal marker is created only if absent, and expires after the idempotency TTL;
- a webhook row whose task only wrote items idempotent by their own keys (a message stored if
  absent, a status moved forward only) is not written at all: those writes are the done-mark.
  A second copy finds them there, its writes fail their conditions, and it is a duplicate. The
  row stays `queued` (accepted) for the rest of its retention; see `effect_is_mark`.

A row may be finished from `queued`, and also from `failed` or `abandoned`: a DLQ redrive or a
late copy of abandoned work must be able to complete it. Finishing from anything else (done,
expired) means another copy got there first.

A replay (`Envelope.generation` > 0) re-opens work an earlier generation finished, once per
generation: see domain/consumer/generations.py, whose rules `open_to`, `finish` and `marker_key` apply.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pipeline import schema
from pipeline.domain.consumer import generations
from pipeline.domain.effects import OnConflict, Put, Table, Update
from pipeline.domain.envelope import Envelope
from pipeline.domain.errors import Classified
from pipeline.schema.rows import (
    ATTEMPTS,
    DEFERRALS,
    ERROR_CLASS,
    FINISHED_AT,
    LAST_ERROR,
    OUTCOME,
    RESULT,
    STATUS,
    UPDATED_AT,
)

REOPENABLE = frozenset({schema.RowStatus.QUEUED, schema.RowStatus.FAILED, schema.RowStatus.ABANDONED})
_ROW_TABLES = {"webhook": Table.WEBHOOK_LOG, "job": Table.JOBS}


def marker_key(lane: str, work_id: str, generation: int = 0) -> str:
    base = f"done#{lane}#{work_id}"
    return base if generation == 0 else f"{base}#g{generation}"


@dataclass(frozen=True)
class Obligation:
    table: Table
    key: Mapping[str, Any]
    found: Mapping[str, Any] | None
    """The row or marker as read (consistently) before the task; None when absent."""

    @property
    def internal(self) -> bool:
        return self.table is Table.STATE

    @property
    def status(self) -> str | None:
        if self.found is None:
            return None
        if self.internal:
            return schema.RowStatus.DONE
        return str(self.found.get(STATUS) or "")

    @property
    def open(self) -> bool:
        """Work still to do: no marker yet, or a row in a status a consumer may finish."""
        if self.internal:
            return self.found is None
        return self.status in REOPENABLE

    def open_to(self, generation: int) -> bool:
        """`open` for the pipeline's own traffic; for a replay, whether its generation has yet to
        run here (an internal marker is per generation, so absent is open)."""
        if generation == 0 or self.internal:
            return self.open
        return generations.row_open(self.status, self.found, generation)

    @property
    def missing_row(self) -> bool:
        return not self.internal and self.found is None


def effect_is_mark(obligation: Obligation, keyed: bool, called_out: bool) -> bool:
    """Whether the task's writes alone finish this record (no row write, no transaction).

    Only for a webhook row that is plainly queued: a job's row is its status (GET /jobs/{id}
    reads it); a row in the pending index is one the door could not send, which the sweeper
    watches until a consumer takes it out; a failed or abandoned row should say it recovered.
    And only when re-running the task costs nothing but reads (`keyed`, no vendor call): a copy
    arriving after the work was done runs the task again before its writes find their items.
    """
    if obligation.table is not Table.WEBHOOK_LOG or obligation.found is None:
        return False
    if obligation.status != schema.RowStatus.QUEUED or schema.PENDING_SHARD in obligation.found:
        return False
    return keyed and not called_out


def locate(envelope: Envelope, lane: str) -> tuple[Table, dict[str, Any]]:
    table = _ROW_TABLES.get(envelope.source)
    if table is None:
        return Table.STATE, {schema.PK: marker_key(lane, envelope.id, envelope.generation)}
    return table, {schema.ID: envelope.id}


def _error_values(error: Classified | None) -> dict[str, Any]:
    if error is None:
        return {}
    return {LAST_ERROR: f"{error.reason}: {error.message}", ERROR_CLASS: error.error_class}


def finish(
    obligation: Obligation,
    envelope: Envelope,
    *,
    status: str,
    now: float,
    attempts: int,
    marker_ttl_seconds: int,
    error: Classified | None = None,
    outcome: str | None = None,
    result: Mapping[str, int] | None = None,
    keep_until: int | None = None,
) -> Put | Update | None:
    """The write that finishes the obligation, or None for internal work that is not done (an
    expired or failed tick leaves no marker: a redrive may run it again), or for a replay that did
    not get done on a row an earlier generation finished (the row keeps what that one did).
    `keep_until` replaces the row's expiry (a dead-lettered row must outlive its dead letter)."""
    replayed = envelope.generation > 0 and not obligation.internal
    if replayed and status != schema.RowStatus.DONE and obligation.status not in REOPENABLE:
        return None
    if obligation.internal:
        if status != schema.RowStatus.DONE:
            return None
        return Put(
            table=Table.STATE,
            item={
                **obligation.key,
                OUTCOME: outcome or status,
                FINISHED_AT: now,
                ATTEMPTS: attempts,
                schema.TTL: int(now) + marker_ttl_seconds,
            },
            condition="attribute_not_exists(#pk)",
            names={"#pk": schema.PK},
            on_conflict=OnConflict.FAIL,
        )
    values: dict[str, Any] = {
        STATUS: status,
        UPDATED_AT: now,
        FINISHED_AT: now,
        ATTEMPTS: attempts,
        DEFERRALS: envelope.deferrals,
        **_error_values(error),
    }
    if result and obligation.table is Table.JOBS:
        values[RESULT] = dict(result)
    if keep_until is not None:
        values[schema.TTL] = keep_until
    names = {f"#{name}": name for name in values}
    names["#shard"] = schema.PENDING_SHARD
    sets = ", ".join(f"#{name} = :{name}" for name in values)
    condition = "#status = :read"
    more_values: dict[str, Any] = {}
    if replayed and status == schema.RowStatus.DONE:
        # The status alone cannot tell two copies of one replay apart (done → done): the
        # generation does, and only the first copy finds it lower.
        below, gen_names, more_values = generations.mark_condition(envelope.generation)
        condition = f"{condition} AND {below}"
        names.update(gen_names)
        sets += ", " + ", ".join(f"{name} = {value}" for name, value in zip(gen_names, more_values, strict=True))
    return Update(
        table=obligation.table,
        key=obligation.key,
        expression=f"SET {sets} REMOVE #shard",
        condition=condition,
        names=names,
        values={
            **{f":{name}": value for name, value in values.items()},
            ":read": obligation.status,
            **more_values,
        },
        on_conflict=OnConflict.FAIL,
    )


def retry_note(obligation: Obligation, envelope: Envelope, *, now: float, attempts: int, error: Classified) -> Update:
    """What a row shows between attempts (`GET /jobs/{id}`): attempts so far and the last error.
    The row stays pending and in the index."""
    values: dict[str, Any] = {
        UPDATED_AT: now,
        ATTEMPTS: attempts,
        DEFERRALS: envelope.deferrals,
        **_error_values(error),
    }
    names = {f"#{name}": name for name in values}
    names["#status"] = STATUS
    return Update(
        table=obligation.table,
        key=obligation.key,
        expression="SET " + ", ".join(f"#{name} = :{name}" for name in values),
        condition="#status = :read",
        names=names,
        values={**{f":{name}": value for name, value in values.items()}, ":read": obligation.status},
        on_conflict=OnConflict.FAIL,
    )


def pending_again(obligation: Obligation, *, now: float) -> Update:
    """Puts a webhook row in the pending index (as the door does for a failed send), so the
    sweeper sees it while it is unfinished; the row's status is left as it is."""
    shard = schema.pending_shard(str(obligation.key[schema.ID]))
    return Update(
        table=obligation.table,
        key=obligation.key,
        expression="SET #shard = :shard, #since = if_not_exists(#since, :since)",
        condition="#status = :read",
        names={"#shard": schema.PENDING_SHARD, "#since": schema.PENDING_SINCE, "#status": STATUS},
        values={":shard": shard, ":since": now, ":read": obligation.status},
        on_conflict=OnConflict.FAIL,
    )
