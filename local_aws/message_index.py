"""One standard queue's messages, indexed so no call's cost grows with the number of messages.

- A message is ready, delayed (DelaySeconds not yet passed) or in flight (received, visibility
  timeout not yet passed). Delayed and in-flight messages wait in one heap ordered by when they
  become ready; ready ones wait in their message group's heap, oldest first, and a receive picks
  the group as SQS fair queues do (local_aws/fair_groups.py).
- A receive takes ready messages, moves to the dead-letter queue those already received
  maxReceiveCount times (as SQS does, on the receive after the last allowed one), bumps receive
  counts and hands out a new receipt handle; any handle a message was given can delete it or
  change its visibility, as in moto; deleting an already deleted message succeeds.
- Messages past the retention period are dropped when they reach the front.
- The approximate counts, the oldest message's age and the fair-queue figures are kept as the
  messages change state; how long a consumer held each message (receive to delete, visibility
  change or visibility expiry) is its group's processing time.

Heaps are invalidated lazily (each entry carries the message's version), so every operation is
O(log n) in the queue's messages and O(log g) in its groups.
"""

from __future__ import annotations

import heapq
import itertools
import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

from local_aws import fairness
from local_aws.fair_groups import DELAYED, IN_FLIGHT, VISIBLE, FairGroups
from local_aws.fairness import FairCounts, Fairness

DELETED_HANDLES_KEPT = 100_000
"""Receipt handles of deleted messages remembered, so a repeated delete still succeeds (SQS's
behaviour) without the set growing for ever."""
DELETED_HANDLES_SECONDS = 120
"""...and for no longer than this: a repeated delete is an SDK retry of one whose answer was lost,
which botocore makes within its attempts (standard mode: 3, backoff capped at 20 s). Kept by count
alone, 50 deletes a second grew the runtime's memory for half an hour before the bound held."""

READY, WAITING = "ready", "waiting"

FAIRNESS: Fairness = fairness.AWS
"""Thresholds and clocks of the queues created from now on; the local runtime scales them."""


@dataclass(frozen=True)
class Counts:
    visible: int
    in_flight: int
    delayed: int
    oldest_sent_ms: int | None


class MessageIndex:
    """One standard queue's messages. Every method takes the queue's lock itself."""

    def __init__(self, fairness: Fairness | None = None) -> None:
        self.lock = threading.Condition()
        self._by_id: dict[str, Any] = {}
        self._handles: dict[str, str] = {}
        self._deleted: OrderedDict[str, float] = OrderedDict()
        """Receipt handle of a deleted message -> when it was deleted (ms), oldest first."""
        self._waiting: list[tuple[float, int, str, int]] = []
        """(ready at ms, sequence, message id, version)"""
        self._by_age: list[tuple[int, int, str]] = []
        self._state: dict[str, tuple[str, int, bool]] = {}
        """message id -> (READY | WAITING, version, received at least once)"""
        self._taken_at: dict[str, float] = {}
        """In-flight message id -> when this receive took it (ms): its processing time so far."""
        self._sequence = itertools.count()
        self.groups = FairGroups(fairness or FAIRNESS, self._is_ready, self._by_id.__contains__)

    def _is_ready(self, message_id: str, version: int) -> bool:
        state = self._state.get(message_id)
        return state is not None and state[0] == READY and state[1] == version

    # ------------------------------------------------------------------ state changes (lock held)

    def _set_ready(self, message: Any) -> None:
        version = self._bump(message.id)
        self._state[message.id] = (READY, version, self._received(message.id))
        group = self.groups.of(message.id)
        self.groups.count(group, VISIBLE, 1)
        self.groups.push_ready(group, (int(message.sent_timestamp or 0), next(self._sequence), message.id, version))

    def _set_waiting(self, message: Any, until_ms: float, *, received: bool) -> None:
        version = self._bump(message.id)
        self._state[message.id] = (WAITING, version, received)
        heapq.heappush(self._waiting, (until_ms, next(self._sequence), message.id, version))
        self.groups.count(self.groups.of(message.id), IN_FLIGHT if received else DELAYED, 1)

    def _bump(self, message_id: str) -> int:
        """Leaves the message's current state; returns its next version."""
        state = self._state.get(message_id)
        if state is None:
            return 0
        kind, version, received = state
        if kind == READY:
            self.groups.count(self.groups.of(message_id), VISIBLE, -1)
        else:
            self.groups.count(self.groups.of(message_id), IN_FLIGHT if received else DELAYED, -1)
        return version + 1

    def _received(self, message_id: str) -> bool:
        state = self._state.get(message_id)
        return bool(state and state[2])

    def _finish(self, message_id: str, until_ms: float) -> None:
        """The consumer's hold on the message ended at `until_ms`: count it as processing time."""
        taken = self._taken_at.pop(message_id, None)
        if taken is not None:
            self.groups.finished(self.groups.of(message_id), until_ms - taken, until_ms)

    def _promote(self, now_ms: float) -> None:
        """Messages whose delay or visibility timeout has passed become ready."""
        while self._waiting and self._waiting[0][0] < now_ms:
            until_ms, _, message_id, version = heapq.heappop(self._waiting)
            state = self._state.get(message_id)
            if state is None or state[1] != version:
                continue
            self._finish(message_id, until_ms)
            self._set_ready(self._by_id[message_id])

    def _forget(self, message: Any, now_ms: float) -> None:
        self._finish(message.id, now_ms)
        if message.id in self._state:
            self._bump(message.id)
        self._state.pop(message.id, None)
        self._by_id.pop(message.id, None)
        self.groups.leave(message.id)
        for handle in message.all_receipt_handles:
            if handle is not None:
                self._handles.pop(handle, None)
                self._deleted[handle] = now_ms
        self._forget_deleted(now_ms)

    def _forget_deleted(self, now_ms: float) -> None:
        cutoff = now_ms - DELETED_HANDLES_SECONDS * 1000
        while self._deleted and (
            len(self._deleted) > DELETED_HANDLES_KEPT or next(iter(self._deleted.values())) < cutoff
        ):
            self._deleted.popitem(last=False)

    # ------------------------------------------------------------------ the queue's API

    def add(self, message: Any, now_ms: float) -> None:
        with self.lock:
            self._by_id[message.id] = message
            heapq.heappush(self._by_age, (int(message.sent_timestamp or 0), next(self._sequence), message.id))
            self.groups.join(message, now_ms)
            if message.delayed_until and message.delayed_until > now_ms:
                self._set_waiting(message, message.delayed_until, received=False)
            else:
                self._set_ready(message)
            self.lock.notify_all()

    def take(
        self,
        count: int,
        now_ms: float,
        *,
        visibility_timeout: int,
        max_receives: int | None,
        retention_ms: float,
    ) -> tuple[list[Any], list[Any]]:
        """Up to `count` received messages (the originals, already marked received), and the ones
        to move to the dead-letter queue."""
        taken: list[Any] = []
        to_dlq: list[Any] = []
        with self.lock:
            self._promote(now_ms)
            while len(taken) < count:
                picked = self.groups.pop_ready(now_ms)
                if picked is None:
                    break
                group, (_, _, message_id, _) = picked
                message = self._by_id[message_id]
                if (message.sent_timestamp or 0) + retention_ms <= now_ms:
                    self._forget(message, now_ms)
                    continue
                if max_receives is not None and message.approximate_receive_count >= max_receives:
                    self._forget(message, now_ms)
                    to_dlq.append(message)
                    continue
                message.mark_received(visibility_timeout=visibility_timeout)
                self._handles[message.receipt_handle] = message_id
                if visibility_timeout:
                    self._set_waiting(message, message.visible_at, received=True)
                    self._taken_at[message_id] = now_ms
                    self.groups.received(group, now_ms)
                taken.append(message)
            for message in taken:
                if not visibility_timeout:
                    self._set_ready(message)  # visible again at once, but not twice in one receive
        return taken, to_dlq

    def find(self, receipt_handle: str) -> Any | None:
        with self.lock:
            message_id = self._handles.get(receipt_handle)
            return None if message_id is None else self._by_id.get(message_id)

    def delete(self, receipt_handle: str, now_ms: float) -> bool:
        """True when a message was deleted or had been; False for a handle never given out."""
        with self.lock:
            message_id = self._handles.get(receipt_handle)
            if message_id is None:
                return receipt_handle in self._deleted
            message = self._by_id.get(message_id)
            if message is not None:
                self._forget(message, now_ms)
            return True

    def change_visibility(self, message: Any, visibility_timeout: int, now_ms: float) -> None:
        """Ends the consumer's processing of this receive, whatever the new timeout: this
        pipeline's consumers change visibility only to give a message back (a retry's backoff)."""
        with self.lock:
            if message.id not in self._by_id:
                return
            self._finish(message.id, now_ms)
            message.change_visibility(visibility_timeout)
            if message.visible_at < now_ms:
                self._set_ready(message)
                self.lock.notify_all()
            else:
                self._set_waiting(message, message.visible_at, received=True)

    def clear(self, now_ms: float) -> None:
        with self.lock:
            for message in list(self._by_id.values()):
                for handle in message.all_receipt_handles:
                    if handle is not None:
                        self._deleted[handle] = now_ms
            self._forget_deleted(now_ms)
            self._by_id.clear()
            self._handles.clear()
            self._state.clear()
            self._taken_at.clear()
            self._waiting.clear()
            self._by_age.clear()
            self.groups.clear()

    def messages(self) -> list[Any]:
        with self.lock:
            return list(self._by_id.values())

    def counts(self, now_ms: float) -> Counts:
        with self.lock:
            self._promote(now_ms)
            while self._by_age and self._by_age[0][2] not in self._by_id:
                heapq.heappop(self._by_age)
            oldest = self._by_age[0][0] if self._by_age else None
            in_flight, delayed = self.groups.in_flight, self.groups.delayed
            return Counts(len(self._by_id) - in_flight - delayed, in_flight, delayed, oldest)

    def fair_counts(self, now_ms: float) -> FairCounts:
        with self.lock:
            self._promote(now_ms)
            return self.groups.snapshot(now_ms)

    def wait_for_ready(self, timeout: float, now_ms: float) -> None:
        with self.lock:
            self._promote(now_ms)
            if self.groups.has_ready:
                return
            wake = timeout
            if self._waiting:
                wake = min(timeout, max(0.0, (self._waiting[0][0] - now_ms) / 1000) + 0.001)
            self.lock.wait(wake)
