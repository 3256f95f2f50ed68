"""Waiting for a condition on a running pipeline: until it holds, or until a timeout."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any


def wait_for(predicate: Callable[[], Any], timeout: float, *, interval: float = 0.2, what: str = "condition") -> Any:
    """The predicate's first truthy value; TimeoutError naming `what` if none came in time."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() >= deadline:
            raise TimeoutError(f"timed out after {timeout:.0f} s waiting for {what}")
        time.sleep(interval)


def poll(predicate: Callable[[], Any], timeout: float, *, interval: float = 0.25) -> Any:
    """Like wait_for, but returns the last value instead of raising: for a caller that reports
    what it saw (a demo's expectation, a scenario's figure) rather than failing."""
    deadline = time.monotonic() + timeout
    value = predicate()
    while not value and time.monotonic() < deadline:
        time.sleep(interval)
        value = predicate()
    return value
