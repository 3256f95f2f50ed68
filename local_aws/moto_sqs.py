"""moto's standard SQS queues, indexed so no call's cost grows with the number of messages.

moto keeps a queue as one list: every receive, delete, visibility change and attribute read walks
all of it (a send reads every attribute, so three walks), and every receipt handle ever deleted is
kept in a set. At a few thousand queued messages a receive costs milliseconds and the process
grows without bound. This replaces the storage of standard queues with an index
(local_aws/message_index.py) under the same API and the same semantics, and makes a standard
queue whose messages carry a MessageGroupId a fair queue, as SQS does
(local_aws/fair_groups.py). FIFO queues keep moto's own implementation: nothing here uses one
at volume.
"""

from __future__ import annotations

from copy import deepcopy
from typing import Any

from local_aws import message_index
from local_aws.fairness import FairCounts, Fairness
from local_aws.message_index import Counts, MessageIndex

__all__ = ["Counts", "FairCounts", "MessageIndex", "counts_of", "fair_counts_of", "install", "use_fairness"]


def use_fairness(fairness: Fairness) -> Fairness:
    """Fair-queue thresholds and clocks for the queues created from now on; returns the previous."""
    previous = message_index.FAIRNESS
    message_index.FAIRNESS = fairness
    return previous


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
    queue_class._messages = property(_get_messages, _set_messages)  # type: ignore[attr-defined,assignment]
    queue_class.messages = property(  # type: ignore[assignment]
        lambda self: [m for m in _get_messages(self) if m.visible and not m.delayed]
    )
    queue_class.add_message = _add_message  # type: ignore[method-assign,assignment]
    queue_class.delete_message = _delete_message  # type: ignore[method-assign,assignment]
    queue_class.wait_for_messages = _wait_for_messages  # type: ignore[method-assign,assignment]
    queue_class.approximate_number_of_messages = property(lambda q: counts_of(q).visible)  # type: ignore[assignment]
    queue_class.approximate_number_of_messages_not_visible = property(  # type: ignore[assignment]
        lambda q: counts_of(q).in_flight
    )
    queue_class.approximate_number_of_messages_delayed = property(lambda q: counts_of(q).delayed)  # type: ignore[assignment]
    backend_class.receive_message = _receive_message  # type: ignore[method-assign,assignment]
    backend_class.change_message_visibility = _change_message_visibility  # type: ignore[method-assign,assignment]
    backend_class.purge_queue = _purge_queue  # type: ignore[method-assign,assignment]
    models.generate_receipt_handle = _receipt_handle
    _PATCHED = True


def _receipt_handle() -> str:
    """185 random characters, as moto's, from one draw of its seedable generator: moto's own drew
    each character apart, 0.3 ms a handle here, nine tenths of a receive of 10 in the index."""
    from moto.moto_api._internal import mock_random

    return format(mock_random.getrandbits(740), "0185x")


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
        index.clear(_now_ms())
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
    if not index_of(queue).delete(receipt_handle, _now_ms()):
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
    index_of(queue).clear(_now_ms())
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


def fair_counts_of(queue: Any) -> FairCounts | None:
    """The fair-queue figures of a standard queue (None for a FIFO queue), read without receiving."""
    if not _standard(queue):
        return None
    return index_of(queue).fair_counts(_now_ms())
