"""Whether a pending row is lost: replayed, left alone as late, or given up on.

A row is the obligation and the queue only the fast path to it, so a row still pending well after
it was written may have lost its message. Or it may simply be queued behind a backlog: replaying
that kind adds work exactly when the consumer is behind, and under load it feeds itself, because
every copy lengthens the queue all the other rows are waiting in. So a row is called lost only when
its lane says so:

- A webhook row the door could not send (it enters the index only then): nothing of it is
  queued, so it is lost as soon as the grace period has passed, however busy its lane.
- The lane holds nothing (visible, in flight or delayed): nothing the row waits for is queued, so
  it is lost as soon as the grace period has passed.
- The lane's depth cannot be read: unknown counts as busy. A sweep that cannot see a lane does not
  replay into it; during an SQS incident that would pile copies onto the queue.
- The lane is busy: the row is late, not lost, while it is within patience (the configured window
  or the lane's own objective, whichever is longer). Past that it stays late for as long as it may
  still be queued, and is lost once the lane has drained past it, or once the hard cap passes.

Patience must scale with the backlog (a message behind N others at drain rate r waits about N/r),
and a fixed window cannot: the local environment's 30 seconds replayed rows queued behind a
thousand messages, each replay lengthening that queue, and abandoned some after three copies.

"Drained past" is counted rather than read as an age: SQS reports its oldest message's age only as
a CloudWatch metric, a minute or more late (admission avoids it for the same reason). Every sweep
that reads a lane's depth keeps that sighting in the state table, beside the drain counts the
lane's consumers keep for admission. Whatever was ahead of a row's message at a sighting was counted
in it, so once the consumers have finished that many messages since, plus as many as are in flight
now (the row's own message may be one still being worked on), that message would have been taken,
and a row still pending has lost it. Only sightings a grace period or more after the row's latest
send count: the approximate depth may not include a message sent a moment before. Standard queues
are only roughly first in, first out, and a deferral re-sends its message to the back, so the count
can come early; that costs a duplicate, which the consumer's idempotency absorbs. The hard cap
bounds the other way: a lane that stalls, or that cannot be read, never drains past anything.
Sightings are per lane, not per row, so a thousand late rows cost one write a sweep, not a thousand.

Patience runs from the row's latest send, not its first: a replay waits behind the same backlog as
the original did, so it gets the same patience, not just the grace period (with only the grace
period, a busy lane's replayed row was replayed again each grace period until it was abandoned).

A task with more to do than one run's time (a long erasure) re-sends itself with its progress,
and notes that progress and the time on its row (schema.PROGRESS, schema.ALIVE_AT). Each note is a
send like any other: its patience runs from it, so a row whose task keeps reporting is late, not
lost, however long ago it was written, and is neither replayed from scratch nor abandoned. One
whose continuation was lost is replayed after all, carrying the progress from its row.

A row that has been replayed `max_replays` times and is still pending most likely kills whatever
processes it, so it is marked abandoned, loudly, instead of being fed to the consumer forever.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum

from pipeline.domain.sweep.inputs import LaneHistory, LaneView, PendingRow
from pipeline.settings.sweeper_policy import SweeperSettings


class Verdict(StrEnum):
    SETTLING = "settling"
    """Replayed, or re-sent by its own task, less than a grace period ago: that copy has not had its
    chance yet."""
    LATE = "late"
    """Its lane is busy (or unreadable) and has not shown it lost: most likely queued."""
    REPLAY = "replay"
    ABANDON = "abandon"


@dataclass(frozen=True)
class Patience:
    """How long a busy lane's row is left alone: `within` unconditionally, then while the lane
    has not drained past it, up to `cap`. Both run from the row's latest send."""

    within: float
    cap: float


def patience_for(settings: SweeperSettings, objective_seconds: float) -> Patience:
    """A busy lane's row is not called lost while it is within the patience window, nor while it
    is within its own lane's objective: a bulk lane promises 30 minutes, and replaying its
    20-minute-old rows would only lengthen the backlog it is patiently working through. The cap
    never cuts that short."""
    within = max(settings.patience_seconds, objective_seconds)
    return Patience(within=within, cap=max(settings.patience_cap_seconds, within))


def drained_past(row: PendingRow, lane: LaneView, history: LaneHistory | None, grace_seconds: float) -> bool:
    """Whether, since some sighting of the lane taken a grace period or more after the row's latest
    send, the lane has finished everything it held then, plus as many as it is working on now
    (see the module docstring)."""
    if lane.depth is None or history is None:
        return False
    return any(
        seen.at >= row.last_sent + grace_seconds and history.finished_after(seen.at) >= seen.depth + lane.in_flight
        for seen in history.seen
    )


def judge(
    row: PendingRow,
    *,
    now: float,
    lane: LaneView,
    patience: Patience,
    history: Callable[[float], LaneHistory | None],
    settings: SweeperSettings,
) -> Verdict:
    """`history(since)` is asked only about a busy lane's row past its patience and short of the cap."""
    touched = row.last_touched
    if touched is not None and now - touched < settings.grace_seconds:
        return Verdict.SETTLING
    if (
        not lane.empty
        and not row.never_sent
        and _may_still_be_queued(row, now, lane, patience, history, settings.grace_seconds)
    ):
        return Verdict.LATE
    if row.replays >= settings.max_replays:
        return Verdict.ABANDON
    return Verdict.REPLAY


def _may_still_be_queued(
    row: PendingRow,
    now: float,
    lane: LaneView,
    patience: Patience,
    history: Callable[[float], LaneHistory | None],
    grace_seconds: float,
) -> bool:
    waited = now - row.last_sent
    if waited < patience.within:
        return True
    if waited >= patience.cap:
        return False
    since = row.last_sent + grace_seconds
    return not drained_past(row, lane, history(since), grace_seconds)
