"""SQS fair queues for the indexed standard queues (local_aws/message_index.py).

A standard queue whose messages carry a MessageGroupId is a fair queue: each group is a tenant,
and SQS returns quiet tenants' messages before a noisy neighbour's. As AWS documents it:

- a group is noisy when it holds more than about 10% of the queue's in-flight messages and at
  least about 30 of them (concurrency share), or more than about 10% of the queue's recent
  consumer processing time (processing-time share);
- a receive returns quiet groups' messages first; it returns a noisy group's only when no quiet
  one is waiting, and among noisy groups the one with the fewest messages in flight first;
- a group stops being noisy when it is drained or has sent nothing for 5 minutes;
- a message without a MessageGroupId is a tenant of its own.

Here every group keeps its ready messages in a heap of its own (oldest first) and its counts, so
a receive picks a group in O(log groups) from two heaps of groups: quiet ones by their oldest
ready message, noisy ones by (in flight, oldest ready message). Entries are invalidated lazily,
as in the message index: each carries the group's key version, and a heap is rebuilt when stale
entries outnumber the live ones, so its size stays within a constant of the number of groups.

Where this approximates AWS is written down in docs/RUNBOOK.md ("Fair queues, locally").
"""

from __future__ import annotations

import heapq
import itertools
import math
from collections.abc import Callable
from typing import Any

from local_aws.fairness import FairCounts, Fairness, NoisyGroup

VISIBLE, IN_FLIGHT, DELAYED = 0, 1, 2

ReadyEntry = tuple[int, int, str, int]
"""(sent ms, sequence, message id, version), as in the message index."""


class Group:
    __slots__ = ("busy", "busy_at", "by_age", "counts", "dropped", "entry", "last_sent", "name", "noisy", "ready")

    def __init__(self, name: str | None) -> None:
        self.name = name
        self.ready: list[ReadyEntry] = []
        self.by_age: list[tuple[int, int, str]] = []
        self.counts = [0, 0, 0]
        self.noisy = False
        self.busy = 0.0
        """Processing time (ms), decayed to `busy_at`."""
        self.busy_at = 0.0
        self.last_sent = 0.0
        self.dropped = False
        self.entry: tuple[Any, ...] | None = None
        """The group's one current entry in a selection heap; any other entry of it is stale."""

    @property
    def total(self) -> int:
        return self.counts[VISIBLE] + self.counts[IN_FLIGHT] + self.counts[DELAYED]


class FairGroups:
    """The groups of one queue. Not thread-safe: the message index calls it under its lock."""

    def __init__(self, fairness: Fairness, live: Callable[[str, int], bool], exists: Callable[[str], bool]) -> None:
        self.fairness = fairness
        self._live = live
        """Whether a ready entry (message id, version) is still its message's current state."""
        self._exists = exists
        self._sequence = itertools.count()
        self.clear()

    def clear(self) -> None:
        self._groups: dict[str | None, Group] = {}
        self._of: dict[str, Group] = {}
        self._quiet: list[tuple[Any, ...]] = []
        """(oldest ready sent ms, its sequence, tiebreak, group)"""
        self._noisy: list[tuple[Any, ...]] = []
        """(in flight, oldest ready sent ms, its sequence, tiebreak, group)"""
        self._idle: list[tuple[float, int, Group]] = []
        self._totals = [0, 0, 0]
        self._noisy_count = 0
        self._noisy_sums = [0, 0, 0]
        self._busy = 0.0
        self._busy_at = 0.0

    # ------------------------------------------------------------------ membership and counts

    def join(self, message: Any, now_ms: float) -> Group:
        """A message sent to the queue. Messages without a group are tenants of their own, kept
        together in one group that is never noisy (one message is never a noisy neighbour) and
        whose oldest message comes first, as each would."""
        name = getattr(message, "group_id", None) or None
        group = self._groups.get(name)
        if group is None:
            group = self._groups[name] = Group(name)
        group.last_sent = now_ms
        self._of[message.id] = group
        heapq.heappush(group.by_age, (int(message.sent_timestamp or 0), next(self._sequence), message.id))
        if len(group.by_age) > 2 * group.total + 16:
            group.by_age = [e for e in group.by_age if self._exists(e[2])]
            heapq.heapify(group.by_age)
        return group

    def of(self, message_id: str) -> Group:
        return self._of[message_id]

    def count(self, group: Group, kind: int, delta: int) -> None:
        group.counts[kind] += delta
        self._totals[kind] += delta
        if group.noisy:
            self._noisy_sums[kind] += delta
            if kind == IN_FLIGHT:
                self._rekey(group)

    def leave(self, message_id: str) -> None:
        """The message is gone from the queue. A group left with nothing is drained: it is
        forgotten, and with it its noisy status and its processing time."""
        group = self._of.pop(message_id, None)
        if group is None or group.total:
            return
        if group.noisy:
            self._set_noisy(group, False)
        group.dropped = True
        group.entry = None
        del self._groups[group.name]

    @property
    def has_ready(self) -> bool:
        return self._totals[VISIBLE] > 0

    @property
    def in_flight(self) -> int:
        return self._totals[IN_FLIGHT]

    @property
    def delayed(self) -> int:
        return self._totals[DELAYED]

    # ------------------------------------------------------------------ ready messages

    def push_ready(self, group: Group, entry: ReadyEntry) -> None:
        heapq.heappush(group.ready, entry)
        if len(group.ready) > 2 * group.counts[VISIBLE] + 16:
            group.ready = [e for e in group.ready if self._live(e[2], e[3])]
            heapq.heapify(group.ready)
        if group.entry is None or group.ready[0] is entry:
            self._rekey(group)

    def pop_ready(self, now_ms: float) -> tuple[Group, ReadyEntry] | None:
        """The next message a receive returns: the oldest ready message of the quiet groups, else
        the oldest of the noisy group with the fewest in flight. Quiet groups compete by age, as
        the messages of a standard queue do."""
        self.release_idle(now_ms)
        heap = self._quiet if self._current_top(self._quiet) else self._noisy
        if not self._current_top(heap):
            return None
        group = heapq.heappop(heap)[-1]
        group.entry = None
        entry = heapq.heappop(group.ready)
        self._rekey(group)
        return group, entry

    def _current_top(self, heap: list[tuple[Any, ...]]) -> bool:
        """Drops stale entries from the top of a selection heap; True when the top is current:
        its group's entry, whose oldest ready message is still the one it was keyed by."""
        while heap:
            top = heap[0]
            group = top[-1]
            if group.entry is not top:
                heapq.heappop(heap)
                continue
            self._clean(group)
            if group.ready and group.ready[0][:2] == top[-4:-2]:  # (sent ms, sequence) in either shape
                return True
            heapq.heappop(heap)
            group.entry = None
            self._rekey(group)
        return False

    def _clean(self, group: Group) -> None:
        while group.ready and not self._live(group.ready[0][2], group.ready[0][3]):
            heapq.heappop(group.ready)

    def _rekey(self, group: Group) -> None:
        if group.dropped:
            return
        self._clean(group)
        if not group.ready:
            group.entry = None
            return
        sent, sequence = group.ready[0][:2]
        entry: tuple[Any, ...]
        if group.noisy:
            entry, heap = (group.counts[IN_FLIGHT], sent, sequence, next(self._sequence), group), self._noisy
        else:
            entry, heap = (sent, sequence, next(self._sequence), group), self._quiet
        group.entry = entry
        heapq.heappush(heap, entry)
        if len(heap) > 2 * len(self._groups) + 64:
            heap[:] = [e for e in heap if e[-1].entry is e]
            heapq.heapify(heap)

    # ------------------------------------------------------------------ noisy neighbours

    def received(self, group: Group, now_ms: float) -> None:
        """One more of the group's messages is in flight: its concurrency share may have crossed."""
        self._check(group, now_ms)

    def finished(self, group: Group, held_ms: float, now_ms: float) -> None:
        """A consumer held one of the group's messages for `held_ms`, from its receive to its
        delete, its visibility change or the end of its visibility timeout."""
        held = max(0.0, held_ms)
        self._busy = self._decayed(self._busy, self._busy_at, now_ms) + held
        self._busy_at = now_ms
        group.busy = self._decayed(group.busy, group.busy_at, now_ms) + held
        group.busy_at = now_ms
        self._check(group, now_ms)

    def _check(self, group: Group, now_ms: float) -> None:
        """Only a group's own receives and completions test it: a share that crosses because
        other groups drained is noticed at the group's next receive or completion."""
        if group.noisy or group.name is None or group.dropped:
            return
        fair = self.fairness
        in_flight = group.counts[IN_FLIGHT]
        noisy = in_flight >= fair.min_in_flight and in_flight > fair.concurrency_share * self._totals[IN_FLIGHT]
        if not noisy and group.busy > 0.0:
            busy_total = self._decayed(self._busy, self._busy_at, now_ms)
            noisy = self._decayed(group.busy, group.busy_at, now_ms) > fair.processing_share * busy_total
        if noisy:
            self._set_noisy(group, True)
            heapq.heappush(self._idle, (group.last_sent, next(self._sequence), group))

    def _set_noisy(self, group: Group, noisy: bool) -> None:
        group.noisy = noisy
        sign = 1 if noisy else -1
        self._noisy_count += sign
        for kind in (VISIBLE, IN_FLIGHT, DELAYED):
            self._noisy_sums[kind] += sign * group.counts[kind]
        if not noisy:
            group.busy = 0.0
        group.entry = None
        self._rekey(group)

    def release_idle(self, now_ms: float) -> None:
        """Noisy groups that have sent nothing for the idle time are quiet again."""
        idle_ms = self.fairness.idle_seconds * 1000
        while self._idle and self._idle[0][0] + idle_ms < now_ms:
            last_sent, _, group = heapq.heappop(self._idle)
            if group.dropped or not group.noisy:
                continue
            if group.last_sent != last_sent:
                heapq.heappush(self._idle, (group.last_sent, next(self._sequence), group))
                continue
            self._set_noisy(group, False)

    def _decayed(self, value: float, at_ms: float, now_ms: float) -> float:
        if value <= 0.0:
            return 0.0
        return value * math.exp(-max(0.0, now_ms - at_ms) / (self.fairness.recent_seconds * 1000))

    # ------------------------------------------------------------------ what CloudWatch reads

    def snapshot(self, now_ms: float, shown: int = 5) -> FairCounts:
        """The quiet groups' counts; their oldest message and the noisy groups' names cost
        O(groups), which only the once-a-second metrics pay."""
        self.release_idle(now_ms)
        oldest: int | None = None
        noisy = []
        for group in self._groups.values():
            if group.noisy:
                noisy.append(NoisyGroup(str(group.name), group.counts[VISIBLE], group.counts[IN_FLIGHT]))
                continue
            while group.by_age and not self._exists(group.by_age[0][2]):
                heapq.heappop(group.by_age)
            if group.by_age and (oldest is None or group.by_age[0][0] < oldest):
                oldest = group.by_age[0][0]
        visible, in_flight, delayed = (self._totals[k] - self._noisy_sums[k] for k in (VISIBLE, IN_FLIGHT, DELAYED))
        noisy.sort(key=lambda g: (-(g.visible + g.in_flight), g.name))
        return FairCounts(self._noisy_count, visible, in_flight, delayed, oldest, tuple(noisy[:shown]))
