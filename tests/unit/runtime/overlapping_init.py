"""A handler module whose set-up notices another set-up running beside it, as module-level state
that is not thread-safe would (two Powertools Loggers for one service, made at once)."""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping
from typing import Any

_guard = threading.Lock()
building = 0
overlaps = 0


def create_handler(environ: Mapping[str, str]) -> Any:
    global building, overlaps
    with _guard:
        building += 1
        if building > 1:
            overlaps += 1
    time.sleep(0.02)
    with _guard:
        building -= 1
    return lambda event, context: {"statusCode": 200, "body": "ok"}


def handler(event: Any, context: Any) -> Any:
    raise AssertionError("the runtime calls create_handler, never this")
