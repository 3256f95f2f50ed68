"""Attributing a task's writes to the person its row is about, so an erasure finds them.

Separate from domain/senders.py, which the webhook door imports: the door names senders but never
builds writes, and this rule needs the effects' types.
"""

from __future__ import annotations

from dataclasses import replace

from pipeline import schema
from pipeline.domain.effects import Put, Table, Write
from pipeline.domain.senders import in_person_partition


def attributed(writes: tuple[Write, ...], sender: str | None) -> tuple[Write, ...]:
    """`writes` with `sender` (a hash) on every data-table put that names no one itself: what the
    work of a row about one person stores is about that person too (a job's payload may name them
    in a way its task does not read, and a task may simply not say). An item in a person's own
    partition already says whom it is about."""
    if sender is None:
        return writes
    return tuple(
        replace(write, item={**write.item, schema.SENDER_HASH: sender})
        if isinstance(write, Put)
        and write.table is Table.DATA
        and schema.SENDER_HASH not in write.item
        and not in_person_partition(write.item)
        else write
        for write in writes
    )
