"""moto's standard SQS queues, indexed so no call's cost grows with the number of messages.

moto keeps a queue as one list: every receive, delete, visibility change and attribute read walks
all of it (a send reads every attribute, so three walks), and every receipt handle ever deleted is
kept in a set. At a few thousand queued messages a receive costs milliseconds and the process
grows without bound. This replaces the storage of standard queues with an index, under the same
API and the same semantics:

- a message is ready, delayed (DelaySeconds not yet passed) or in flight (received, visibility
  timeout not yet passed); delayed and in-flight messages wait in one heap ordered by when they
  become ready, ready ones in a heap ordered by when they were sent, so receives are oldest first;
- a receive takes ready messages, moves to the dead-letter queue those already received
  maxReceiveCount times (as SQS does, on the receive after the last allowed one), bumps receive
  counts and hands out a new receipt handle; any handle a message was given can delete it or
  change its visibility, as in moto; deleting an already deleted message succeeds;
- messages past the retention period are dropped when they reach the front;
- the approximate counts and the oldest message's age are kept as the messages change state.

Heaps are invalidated lazily (each entry carries the message's version), so every operation is
O(log n). FIFO queues keep moto's own implementation: nothing here uses one at volume.
"""

from __future__ import annotations

import heapq
import itertools
import threading
from collections import OrderedDict
from copy import deepcopy
from dataclasses import dataclass
from typing import Any

DELETED_HANDLES_KEPT = 100_000
"""Receipt handles of deleted messages remembered, so a repeated delete still succeeds (SQS's
behaviour) without the set growing for ever."""

READY, WAITING = "ready", "waiting"


@dataclass(frozen=True)
class Counts:
    visible: int
    in_flight: int
    delayed: int
    oldest_sent_ms: int | None


class MessageIndex:
    """One standard queue's messages. Every method takes the queue's lock itself."""

    def __init__(self) -> None:
        self.lock = threading.Condition()
        self._by_id: dict[str, Any] = {}
        self._handles: dict[str, str] = {}
        self._deleted: OrderedDict[str, None] = OrderedDict()
        self._ready: list[tuple[int, int, str, int]] = []
        """(sent ms, sequence, message id, version)"""
        self._waiting: list[tuple[float, int, str, int]] = []
        """(ready at ms, sequence, message id, version)"""
        self._by_age: list[tuple[int, int, str]] = []
        self._state: dict[str, tuple[str, int, bool]] = {}
        """message id -> (READY | WAITING, version, received at least once)"""
        self._sequence = itertools.count()
        self._in_flight = 0
        self._delayed = 0

    # ------------------------------------------------------------------ state changes (lock held)

    def _set_ready(self, message: Any) -> None:
        version = self._bump(message.id)
        self._state[message.id] = (READY, version, self._received(message.id))
        heapq.heappush(self._ready, (int(message.sent_timestamp or 0), next(self._sequence), message.id, version))

    def _set_waiting(self, message: Any, until_ms: float, *, received: bool) -> None:
        version = self._bump(message.id)
        self._state[message.id] = (WAITING, version, received)
        heapq.heappush(self._waiting, (until_ms, next(self._sequence), message.id, version))
        if received:
            self._in_flight += 1
        else:
            self._delayed += 1

    def _bump(self, message_id: str) -> int:
        state = self._state.get(message_id)
        if state is None:
            return 0
        kind, version, received = state
        if kind == WAITING:
            if received:
                self._in_flight -= 1
            else:
                self._delayed -= 1
        return version + 1

    def _received(self, message_id: str) -> bool:
        state = self._state.get(message_id)
        return bool(state and state[2])

    def _promote(self, now_ms: float) -> None:
        """Messages whose delay or visibility timeout has passed become ready."""
        while self._waiting and self._waiting[0][0] < now_ms:
            _, _, message_id, version = heapq.heappop(self._waiting)
            state = self._state.get(message_id)
            if state is None or state[1] != version:
                continue
            self._set_ready(self._by_id[message_id])

    def _forget(self, message: Any) -> None:
        self._bump(message.id)
        self._state.pop(message.id, None)
        self._by_id.pop(message.id, None)
        for handle in message.all_receipt_handles:
            if handle is not None:
                self._handles.pop(handle, None)
                self._deleted[handle] = None
        while len(self._deleted) > DELETED_HANDLES_KEPT:
            self._deleted.popitem(last=False)

    # ------------------------------------------------------------------ the queue's API

    def add(self, message: Any, now_ms: float) -> None:
        with self.lock:
            self._by_id[message.id] = message
            heapq.heappush(self._by_age, (int(message.sent_timestamp or 0), next(self._sequence), message.id))
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
            while self._ready and len(taken) < count:
                _, _, message_id, version = heapq.heappop(self._ready)
                state = self._state.get(message_id)
                if state is None or state[1] != version:
                    continue
                message = self._by_id[message_id]
                if (message.sent_timestamp or 0) + retention_ms <= now_ms:
                    self._forget(message)
                    continue
                if max_receives is not None and message.approximate_receive_count >= max_receives:
                    self._forget(message)
                    to_dlq.append(message)
                    continue
                message.mark_received(visibility_timeout=visibility_timeout)
                self._handles[message.receipt_handle] = message_id
                if visibility_timeout:
                    self._set_waiting(message, message.visible_at, received=True)
                taken.append(message)
            for message in taken:
                if not visibility_timeout:
                    self._set_ready(message)  # visible again at once, but not twice in one receive
        return taken, to_dlq

    def find(self, receipt_handle: str) -> Any | None:
        with self.lock:
            message_id = self._handles.get(receipt_handle)
            return None if message_id is None else self._by_id.get(message_id)

    def delete(self, receipt_handle: str) -> bool:
        """True when a message was deleted or had been; False for a handle never given out."""
        with self.lock:
            message_id = self._handles.get(receipt_handle)
            if message_id is None:
                return receipt_handle in self._deleted
            message = self._by_id.get(message_id)
            if message is not None:
                self._forget(message)
            return True

    def change_visibility(self, message: Any, visibility_timeout: int, now_ms: float) -> None:
        with self.lock:
            if message.id not in self._by_id:
                return
            message.change_visibility(visibility_timeout)
            if message.visible_at < now_ms:
                self._set_ready(message)
                self.lock.notify_all()
            else:
                self._set_waiting(message, message.visible_at, received=True)

    def clear(self) -> None:
        with self.lock:
            for message in list(self._by_id.values()):
                self._forget(message)
            self._ready.clear()
            self._waiting.clear()
            self._by_age.clear()
            self._in_flight = self._delayed = 0

    def messages(self) -> list[Any]:
        with self.lock:
            return list(self._by_id.values())

    def counts(self, now_ms: float) -> Counts:
        with self.lock:
            self._promote(now_ms)
            while self._by_age and self._by_age[0][2] not in self._by_id:
                heapq.heappop(self._by_age)
            oldest = self._by_age[0][0] if self._by_age else None
            total = len(self._by_id)
            return Counts(total - self._in_flight - self._delayed, self._in_flight, self._delayed, oldest)

    def wait_for_ready(self, timeout: float, now_ms: float) -> None:
        with self.lock:
            self._promote(now_ms)
            if self._has_ready():
                return
            wake = timeout
            if self._waiting:
                wake = min(timeout, max(0.0, (self._waiting[0][0] - now_ms) / 1000) + 0.001)
            self.lock.wait(wake)

    def _has_ready(self) -> bool:
        while self._ready:
            _, _, message_id, version = self._ready[0]
            state = self._state.get(message_id)
            if state is not None and state[1] == version:
                return True
            heapq.heappop(self._ready)
        return False


# ---------------------------------------------------------------------------------------- the patch

_PATCHED = False


def index_of(queue: Any) -> MessageIndex:
    index = queue.__dict__.get("_lanes_index")
    if index is None:
        index = queue.__dict__.setdefault("_lanes_index", MessageIndex())
    return index


_ORIGINAL: dict[str, Any] = {}


def install() -> None:
    """Patch moto's SQS models once per process."""
    global _PATCHED
    if _PATCHED:
        return
    from moto.sqs import models

    queue_class = models.Queue
    backend_class = models.SQSBackend
    for name in ("add_message", "delete_message", "wait_for_messages"):
        _ORIGINAL[name] = getattr(queue_class, name)
    for name in ("receive_message", "change_message_visibility", "purge_queue"):
        _ORIGINAL[name] = getattr(backend_class, name)
    queue_class._messages = property(_get_messages, _set_messages)  # type: ignore[attr-defined]
    queue_class.messages = property(  # type: ignore[assignment]
        lambda self: [m for m in _get_messages(self) if m.visible and not m.delayed]
    )
    queue_class.add_message = _add_message  # type: ignore[method-assign]
    queue_class.delete_message = _delete_message  # type: ignore[method-assign]
    queue_class.wait_for_messages = _wait_for_messages  # type: ignore[method-assign]
    queue_class.approximate_number_of_messages = property(lambda q: counts_of(q).visible)  # type: ignore[assignment]
    queue_class.approximate_number_of_messages_not_visible = property(  # type: ignore[assignment]
        lambda q: counts_of(q).in_flight
    )
    queue_class.approximate_number_of_messages_delayed = property(lambda q: counts_of(q).delayed)  # type: ignore[assignment]
    backend_class.receive_message = _receive_message  # type: ignore[method-assign]
    backend_class.change_message_visibility = _change_message_visibility  # type: ignore[method-assign]
    backend_class.purge_queue = _purge_queue  # type: ignore[method-assign]
    _PATCHED = True


def _standard(queue: Any) -> bool:
    return not getattr(queue, "fifo_queue", False)


def _now_ms() -> float:
    from moto.core.utils import unix_time_millis

    return float(unix_time_millis())


def _get_messages(queue: Any) -> list[Any]:
    if _standard(queue) and "_lanes_index" in queue.__dict__:
        return index_of(queue).messages()
    return queue.__dict__.setdefault("_moto_messages", [])


def _set_messages(queue: Any, value: list[Any]) -> None:
    if _standard(queue) and "_lanes_index" in queue.__dict__:
        index = index_of(queue)
        index.clear()
        for message in value:
            index.add(message, _now_ms())
    else:
        queue.__dict__["_moto_messages"] = value


def _add_message(queue: Any, message: Any) -> None:
    if not _standard(queue):
        return _ORIGINAL["add_message"](queue, message)
    index_of(queue).add(message, _now_ms())
    return None


def _delete_message(queue: Any, receipt_handle: str) -> None:
    from moto.sqs.exceptions import ReceiptHandleIsInvalid

    if not _standard(queue):
        return _ORIGINAL["delete_message"](queue, receipt_handle)
    if not index_of(queue).delete(receipt_handle):
        raise ReceiptHandleIsInvalid()
    return None


def _wait_for_messages(queue: Any, timeout: int) -> None:
    if not _standard(queue):
        return _ORIGINAL["wait_for_messages"](queue, timeout)
    index_of(queue).wait_for_ready(timeout, _now_ms())
    return None


def _receive_message(
    backend: Any,
    queue_name: str,
    count: int,
    wait_seconds_timeout: int,
    visibility_timeout: int,
    message_attribute_names: list[str] | None = None,
) -> list[Any]:
    from moto.core.utils import unix_time
    from moto.sqs import models

    queue = backend.get_queue(queue_name)
    if not _standard(queue):
        return _ORIGINAL["receive_message"](
            backend, queue_name, count, wait_seconds_timeout, visibility_timeout, message_attribute_names
        )
    index = index_of(queue)
    max_receives = None
    if queue.dead_letter_queue is not None and queue.redrive_policy:
        max_receives = int(queue.redrive_policy["maxReceiveCount"])
    retention_ms = float(queue.message_retention_period) * 1000
    polling_end = unix_time() + wait_seconds_timeout
    while True:
        taken, to_dlq = index.take(
            count,
            _now_ms(),
            visibility_timeout=visibility_timeout,
            max_receives=max_receives,
            retention_ms=retention_ms,
        )
        for message in to_dlq:
            queue.dead_letter_queue.add_message(message)
        left = polling_end - unix_time()
        if taken or not wait_seconds_timeout or left <= 0:
            break
        index.wait_for_ready(min(left, 1.0), _now_ms())
    result = []
    for message in taken:
        copy = deepcopy(message)
        models._filter_message_attributes(copy, message_attribute_names or [])
        result.append(copy)
    return result


def _change_message_visibility(backend: Any, queue_name: str, receipt_handle: str, visibility_timeout: int) -> None:
    from moto.sqs.exceptions import InvalidParameterValue, ReceiptHandleIsInvalid

    queue = backend.get_queue(queue_name)
    if not _standard(queue):
        return _ORIGINAL["change_message_visibility"](backend, queue_name, receipt_handle, visibility_timeout)
    index = index_of(queue)
    message = index.find(receipt_handle)
    if message is None:
        raise ReceiptHandleIsInvalid
    now = _now_ms()
    if now + int(visibility_timeout) * 1000 - (message.sent_timestamp or 0) > 43200 * 1000:
        raise InvalidParameterValue(
            f"Value {visibility_timeout} for parameter VisibilityTimeout is invalid. Reason: Total "
            "VisibilityTimeout for the message is beyond the limit [43200 seconds]"
        )
    index.change_visibility(message, int(visibility_timeout), now)
    return None


def _purge_queue(backend: Any, queue_name: str) -> None:
    from moto.core.utils import unix_time

    queue = backend.get_queue(queue_name)
    if not _standard(queue):
        return _ORIGINAL["purge_queue"](backend, queue_name)
    queue.last_purged_at = unix_time()
    index_of(queue).clear()
    return None


def counts_of(queue: Any) -> Counts:
    """The CloudWatch-style figures of one queue, read without receiving anything."""
    if not _standard(queue):
        messages = list(queue._messages)
        visible = sum(1 for m in messages if m.visible and not m.delayed)
        delayed = sum(1 for m in messages if m.delayed)
        sent = [m.sent_timestamp for m in messages if m.sent_timestamp is not None]
        return Counts(visible, len(messages) - visible - delayed, delayed, min(sent) if sent else None)
    return index_of(queue).counts(_now_ms())
