"""Replay generations: re-running work on purpose after a fix, once per generation.

A record's done-mark says the work was done, so a copy of it is a duplicate: that is what makes
each effect happen once. A replay after a bug fix (`lanectl replay`, ops/commands/replay.py)
wants the opposite for the work it names: run the task again, and let its writes replace what the
faulty run stored. It must still not run twice for one request: an operator who runs the same
replay twice, or SQS delivering a replayed message twice, must change nothing the second time.

So every replay carries a generation, a whole number the operator chooses (above every earlier
replay's: the audit lists them), in the envelope (`Envelope.generation`). Generation 0 is the
pipeline's own traffic and nothing about it changes: no attribute, no condition, no extra byte or
write unit (tests/unit/domain/test_generations.py pins it). For generation N > 0:

- **The row.** Work is open to generation N when the row's `generation` (absent: 0) is below N,
  whatever its status (done, failed, expired, abandoned, or still queued), except a row that was
  never enqueued (`unparseable`) or was emptied by an erasure (`erased`): there is nothing to run.
  The transactional done-mark adds `generation < N` to its compare-and-set and sets it to N, so of
  two copies of one generation only the first commits; the second is a duplicate (`row_open`,
  `mark_condition`). A failure or expiry of a replay does not set it: a redrive of its dead letter
  may still finish that generation.
- **The task's keyed writes** (standalone and conditional, the ones that are the done-mark of a
  plain webhook row: a message stored if absent, a status moved forward only) carry `generation`
  = N, and their condition becomes "no generation yet, or a lower one, or this one and the
  original condition" (`stamp`). So the first generation-N write replaces an item an earlier
  generation wrote, and a second generation-N copy finds its condition failing, exactly as a
  duplicate of generation 0 does. Within one generation the original rules hold (a `delivered`
  after a `read` is skipped). A replay re-derives an item from the deliveries it replays: replaying
  only the `delivered` of a message whose `read` came later leaves it at `delivered`.
- **The sweeper's replays** are generation 0 (adapters/row_envelopes.py): the rows it watches are
  pending, which no replay finished (a replay's done-mark also takes a row out of the index). A
  replayed message that is lost is found again by running the same replay.
- **Internal work** (no row) keeps its marker per generation (`marks.marker_key`). Follow-ups a
  replayed task sends are generation 0: a reply turn already done is not done again, so a replay
  never sends a customer a second reply.

Cost: a replayed delivery is written as its first run was (one write unit per item up to 1 KB,
each a replace; no index entry changes, since neither `unit`, `sender_hash` nor the projected
`delivery` does), with `generation` adding about 12 bytes to each item; a row finished by the
transactional mark costs that transaction as before.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from pipeline import schema
from pipeline.domain.effects import Put, Update, Write

NAME = "#replay_generation"
VALUE = ":replay_generation"
_SET_CLAUSE = re.compile(r"\bSET\b", re.IGNORECASE)
NOT_REPLAYABLE = frozenset({schema.RowStatus.UNPARSEABLE, schema.RowStatus.ERASED})
"""Never enqueued, or emptied by an erasure: no replay runs them."""


def of(found: Mapping[str, Any] | None) -> int:
    """The generation that last finished a row, or wrote an item; 0 when none says."""
    if not found:
        return 0
    value = found.get(schema.GENERATION)
    return 0 if value is None else int(value)


def row_open(status: str | None, found: Mapping[str, Any] | None, generation: int) -> bool:
    """Whether a replay of `generation` (> 0) still has the row's work to do."""
    if found is None or status in NOT_REPLAYABLE:
        return False
    return of(found) < generation


def mark_condition(generation: int) -> tuple[str, dict[str, str], dict[str, int]]:
    """What the done-mark of a replayed row adds to its compare-and-set, and sets: (condition,
    names, values)."""
    return f"(attribute_not_exists({NAME}) OR {NAME} < {VALUE})", {NAME: schema.GENERATION}, {VALUE: generation}


def stamp(writes: tuple[Write, ...], generation: int) -> tuple[Write, ...]:
    """The task's writes as a replay of `generation` makes them; for 0, exactly the same writes."""
    if generation == 0:
        return writes
    return tuple(_stamped(write, generation) if _keyed(write) else write for write in writes)


def _keyed(write: Write) -> bool:
    return isinstance(write, Put | Update) and write.standalone and write.condition is not None


def _condition(original: str) -> str:
    return f"attribute_not_exists({NAME}) OR {NAME} < {VALUE} OR ({NAME} = {VALUE} AND ({original}))"


def _stamped(write: Write, generation: int) -> Write:
    assert isinstance(write, Put | Update)
    assert write.condition is not None
    if NAME in write.names or VALUE in write.values:
        raise ValueError(f"a write may not use {NAME} or {VALUE}: they are the consumer's")
    names = {**write.names, NAME: schema.GENERATION}
    values = {**write.values, VALUE: generation}
    condition = _condition(write.condition)
    if isinstance(write, Put):
        item = {**write.item, schema.GENERATION: generation}
        return replace(write, item=item, condition=condition, names=names, values=values)
    assignment = f"{NAME} = {VALUE}"
    if _SET_CLAUSE.search(write.expression):
        expression = _SET_CLAUSE.sub(f"SET {assignment},", write.expression, count=1)
    else:
        expression = f"{write.expression} SET {assignment}"
    return replace(write, expression=expression, condition=condition, names=names, values=values)
