"""Timing every call a handler instance's SQS and DynamoDB clients make.

Hooked on botocore's `before-call` / `after-call` events, so a call is timed whole: the SDK's own
retries and backoff included, since the consumer waits for those too. The start time travels in
the call's own request context, so calls made at once on several threads (a task's reads beside
the consumer's writes) do not mix.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any


class CallTimes:
    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._key = f"call_times_started_{id(self)}"
        self._lock = threading.Lock()
        self._slowest = 0.0

    def watch(self, client: Any) -> None:
        events = client.meta.events
        events.register("before-call", self._started, unique_id=f"{self._key}-before")
        events.register("after-call", self._finished, unique_id=f"{self._key}-after")
        events.register("after-call-error", self._finished, unique_id=f"{self._key}-error")

    def slowest(self) -> float:
        with self._lock:
            return self._slowest

    def restart(self) -> float:
        with self._lock:
            closed, self._slowest = self._slowest, 0.0
        return closed

    def _started(self, context: dict[str, Any] | None = None, **_: Any) -> None:
        if context is not None:
            context[self._key] = self._clock()

    def _finished(self, context: dict[str, Any] | None = None, **_: Any) -> None:
        started = None if context is None else context.pop(self._key, None)
        if started is None:
            return
        took = self._clock() - started
        with self._lock:
            self._slowest = max(self._slowest, took)
