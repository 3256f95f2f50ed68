"""The consumer stamps its tasks' writes with their expiry, so no task can forget one.

A put without an expiry of its own gets the effect retention, and one with its own keeps the
earlier of the two; an update gets it on the item it creates (`if_not_exists`: a later update, a
read receipt days after the message, does not extend it). An update that sets its own expiry
keeps it. The expiry itself is domain/retention.py's.
"""

from __future__ import annotations

import re
from dataclasses import replace

from pipeline import schema
from pipeline.domain.effects import TASK_TABLES, Put, Update, Write

NAME = "#retention_ttl"
VALUE = ":retention_ttl"
_SET_CLAUSE = re.compile(r"\bSET\b", re.IGNORECASE)


def _sets_own_expiry(update: Update) -> bool:
    return schema.TTL in update.names.values() or re.search(rf"\b{schema.TTL}\b", update.expression) is not None


def _with_expiry(update: Update, expires_at: int) -> Update:
    if NAME in update.names or VALUE in update.values:
        raise ValueError(f"an update may not use {NAME} or {VALUE}: they are the consumer's")
    assignment = f"{NAME} = if_not_exists({NAME}, {VALUE})"
    if _SET_CLAUSE.search(update.expression):
        expression = _SET_CLAUSE.sub(f"SET {assignment},", update.expression, count=1)
    else:
        expression = f"{update.expression} SET {assignment}"
    return replace(
        update,
        expression=expression,
        names={**update.names, NAME: schema.TTL},
        values={**update.values, VALUE: expires_at},
    )


def stamp(writes: tuple[Write, ...], expires_at: int) -> tuple[Write, ...]:
    """`writes` with an expiry no later than `expires_at` on every put to a task table, and on
    every update to one that sets none itself. Condition checks and the obligation tables' writes
    (the consumer's own) are left as they are."""
    return tuple(_stamped(write, expires_at) for write in writes)


def _stamped(write: Write, expires_at: int) -> Write:
    if write.table not in TASK_TABLES:
        return write
    if isinstance(write, Put):
        own = write.item.get(schema.TTL)
        kept = expires_at if not isinstance(own, int | float) else min(int(own), expires_at)
        return replace(write, item={**write.item, schema.TTL: kept})
    if isinstance(write, Update) and not _sets_own_expiry(write):
        return _with_expiry(write, expires_at)
    return write
