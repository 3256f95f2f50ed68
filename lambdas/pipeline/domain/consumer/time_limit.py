"""Running a task under a hard time limit.

Python cannot stop a running function from outside, and signal-based alarms only work on the
main thread (the local runtime runs consumers on worker threads). So the task runs on its own
daemon thread and the consumer stops waiting for it at the limit. That is enough for correctness
because a task cannot write anything itself: its writes are returned and committed by the
consumer, so a result arriving after the limit is simply never committed. What a late task can
still do is finish an external call it already started, which is why external calls take their
timeout from the task's remaining time.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TypeVar

from pipeline.domain.errors import TaskTimeout

T = TypeVar("T")
A = TypeVar("A")


def run_with_limit(fn: Callable[[A], T], arg: A, limit_seconds: float, name: str = "task") -> T:
    outcome: dict[str, object] = {}

    def target() -> None:
        try:
            outcome["value"] = fn(arg)
        except BaseException as exc:  # handed to the waiting thread, which re-raises it
            outcome["error"] = exc

    worker = threading.Thread(target=target, name=name, daemon=True)
    worker.start()
    worker.join(max(0.0, limit_seconds))
    if worker.is_alive():
        raise TaskTimeout(f"{name} did not finish within its {limit_seconds:.1f} s limit")
    if "error" in outcome:
        raise outcome["error"]  # type: ignore[misc]
    return outcome["value"]  # type: ignore[return-value]
