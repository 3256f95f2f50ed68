"""Noticing that an invocation ran out of time before its batch settled.

Lambda stops an invocation at its timeout wherever it stands, so the code that would have
settled the batch cannot also report that it never got there. A timer thread reports it instead,
`margin` seconds before the end, if the watched block is still running; the block reports it
itself if it ends inside that margin before the timer fires. Either way it is reported once.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from types import TracebackType

OUT_OF_TIME_MARGIN_SECONDS = 0.1
"""Enough for a timer thread to get the GIL and write one log line and one metric document."""


class DeadlineWatch:
    def __init__(
        self,
        remaining: Callable[[], float],
        on_out_of_time: Callable[[], None],
        margin_seconds: float = OUT_OF_TIME_MARGIN_SECONDS,
    ) -> None:
        self._remaining = remaining
        self._report = on_out_of_time
        self._margin = margin_seconds
        self._lock = threading.Lock()
        self._settled = False
        self._reported = False
        self._timer: threading.Timer | None = None

    @property
    def reported(self) -> bool:
        return self._reported

    def __enter__(self) -> DeadlineWatch:
        self._timer = threading.Timer(max(0.0, self._remaining() - self._margin), self._fire)
        self._timer.daemon = True
        self._timer.name = "deadline-watch"
        self._timer.start()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, traceback: TracebackType | None
    ) -> None:
        if self._timer is not None:
            self._timer.cancel()
        late = self._remaining() <= self._margin
        with self._lock:
            self._settled = True
            report = late and not self._reported
            self._reported = self._reported or report
        if report:
            self._report()

    def _fire(self) -> None:
        with self._lock:
            if self._settled or self._reported:
                return
            self._reported = True
        self._report()
