"""The writes a task asks for: plain values the consumer commits together with the done-mark.

A task never writes by itself. It returns these, and the consumer commits them and the record's
done-mark as one conditional write or one TransactWriteItems, so a redelivered, expired-mid-task
or concurrently running copy can only find the work done, never half done.

Values are plain Python (str, int, float, bool, bytes, lists, dicts); the adapter serialises
them. Tables are named logically: tasks may write the data and state tables; the obligation
rows (webhook log, jobs) belong to the consumer.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from pipeline import schema


class Table(StrEnum):
    DATA = "data"
    STATE = "state"
    WEBHOOK_LOG = "webhook_log"
    JOBS = "jobs"


TASK_TABLES = frozenset({Table.DATA, Table.STATE})
KEY_ATTRIBUTES: Mapping[Table, tuple[str, ...]] = {
    Table.DATA: (schema.PK, schema.SK),
    Table.STATE: (schema.PK,),
    Table.WEBHOOK_LOG: (schema.ID,),
    Table.JOBS: (schema.ID,),
}


class OnConflict(StrEnum):
    """What a failed condition on this write means."""

    FAIL = "fail"
    """Only the done-mark: another copy finished the work first (a duplicate)."""
    SKIP = "skip"
    """A stale or repeated write (an older status, a message stored before): drop it and commit
    the rest. One stale item never fails its whole transaction."""
    SUPERSEDE = "supersede"
    """Newer work made this result moot (a newer message arrived mid-turn): commit the done-mark
    alone and report the record superseded."""


@dataclass(frozen=True)
class Put:
    table: Table
    item: Mapping[str, Any]
    condition: str | None = None
    names: Mapping[str, str] = field(default_factory=dict)
    values: Mapping[str, Any] = field(default_factory=dict)
    on_conflict: OnConflict = OnConflict.SKIP
    standalone: bool = False
    """Safe to apply on its own, before the done-mark (re-applying it changes nothing). Lets a
    result larger than one transaction be committed in chunks; see adapters/transactions."""


@dataclass(frozen=True)
class Update:
    table: Table
    key: Mapping[str, Any]
    expression: str
    condition: str | None = None
    names: Mapping[str, str] = field(default_factory=dict)
    values: Mapping[str, Any] = field(default_factory=dict)
    on_conflict: OnConflict = OnConflict.SKIP
    standalone: bool = False


@dataclass(frozen=True)
class Check:
    """A condition on an item the commit does not change (e.g. "the turn marker is still mine")."""

    table: Table
    key: Mapping[str, Any]
    condition: str
    names: Mapping[str, str] = field(default_factory=dict)
    values: Mapping[str, Any] = field(default_factory=dict)
    on_conflict: OnConflict = OnConflict.SUPERSEDE
    standalone: bool = False


Write = Put | Update | Check


def item_key(write: Write) -> tuple[str, tuple[str, ...]]:
    """(table, key values): DynamoDB refuses two operations on one item in a transaction."""
    source = write.item if isinstance(write, Put) else write.key
    return str(write.table), tuple(repr(source.get(name)) for name in KEY_ATTRIBUTES[write.table])
