"""Each function's standard output, as CloudWatch Logs would receive it.

Handlers print structured logs and embedded-metric-format lines to stdout, exactly as on Lambda.
Several functions run in this one process, so stdout is replaced by a writer that sends each line
to the function whose invocation runs on the writing thread. Lines from anything else pass through.
"""

from __future__ import annotations

import contextlib
import json
import sys
import threading
from collections import Counter, deque
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TextIO

LineSink = Callable[[str, str], None]


class PassthroughStream:
    """A text stream standing in for stdout that hands what it does not keep to the real one."""

    def __init__(self, passthrough: TextIO) -> None:
        self._passthrough = passthrough

    def write(self, text: str) -> int:
        return self._passthrough.write(text)

    def flush(self) -> None:
        self._passthrough.flush()

    def isatty(self) -> bool:
        return False

    @property
    def encoding(self) -> str:
        return "utf-8"


class _ThreadRoutedStream(PassthroughStream):
    def __init__(self, capture: OutputCapture, passthrough: TextIO) -> None:
        super().__init__(passthrough)
        self._capture = capture

    def write(self, text: str) -> int:
        function = self._capture.current()
        if function is None:
            return self._passthrough.write(text)
        self._capture.feed(function, text)
        return len(text)


class OutputCapture:
    def __init__(self, *, log_dir: Path | None = None, keep_lines: int = 5000) -> None:
        self._local = threading.local()
        self._sinks: list[LineSink] = []
        self._partial: dict[tuple[int, str], str] = {}
        self._lock = threading.Lock()
        self._log_dir = log_dir
        self._files: dict[str, TextIO] = {}
        self.recent: dict[str, deque[dict[str, Any]]] = {}
        self._keep = keep_lines
        self.console: TextIO = sys.stdout
        self._saved: tuple[TextIO, TextIO] | None = None
        self._closed = False
        self.bytes_written: Counter[str] = Counter()
        """Log bytes each function wrote: what CloudWatch Logs would ingest (the cost scenario)."""

    def install(self) -> None:
        """Route stdout and stderr; the runtime's own console keeps the real stdout."""
        _threads_inherit_binding(self)
        self._saved = (sys.stdout, sys.stderr)
        self._closed = False
        self.console = sys.stdout
        sys.stdout = _ThreadRoutedStream(self, self._saved[0])  # type: ignore[assignment]
        sys.stderr = _ThreadRoutedStream(self, self._saved[1])  # type: ignore[assignment]

    def seal(self) -> None:
        """Keep no more lines: a handler abandoned at stop may still write, and what was kept is
        final (the summary reads it)."""
        with self._lock:
            self._closed = True

    def lines(self, function: str) -> list[dict[str, Any]]:
        """A copy of the structured lines kept for `function`."""
        with self._lock:
            return list(self.recent.get(function, ()))

    def uninstall(self) -> None:
        self.seal()
        if self._saved:
            sys.stdout, sys.stderr = self._saved
            self._saved = None
        for handle in self._files.values():
            handle.close()
        self._files.clear()

    def add_sink(self, sink: LineSink) -> None:
        self._sinks.append(sink)

    @contextlib.contextmanager
    def bound_to(self, function: str) -> Iterator[None]:
        previous = getattr(self._local, "function", None)
        self._local.function = function
        try:
            yield
        finally:
            self._local.function = previous

    def current(self) -> str | None:
        bound = getattr(self._local, "function", None)
        if bound is None:
            # A thread a handler started (a task under its time limit, a deadline timer) writes
            # to that handler's function, as it would inside the same Lambda environment.
            bound = getattr(threading.current_thread(), "_lanes_function", None)
        return bound

    def feed(self, function: str, text: str) -> None:
        key = (threading.get_ident(), function)
        buffered = self._partial.pop(key, "") + text
        *lines, rest = buffered.split("\n")
        if rest:
            self._partial[key] = rest
        for line in lines:
            if line.strip():
                self._emit(function, line)

    def _emit(self, function: str, line: str) -> None:
        with self._lock:
            if self._closed:
                return
            self.bytes_written[function] += len(line.encode()) + 1
            if self._log_dir is not None:
                handle = self._files.get(function)
                if handle is None:
                    self._log_dir.mkdir(parents=True, exist_ok=True)
                    handle = (self._log_dir / f"{function}.log").open("a", encoding="utf-8")
                    self._files[function] = handle
                handle.write(line + "\n")
                handle.flush()
            parsed = _json_or_none(line)
            if parsed is not None:
                self.recent.setdefault(function, deque(maxlen=self._keep)).append(parsed)
        for sink in self._sinks:
            sink(function, line)


def _json_or_none(line: str) -> dict[str, Any] | None:
    if not line.startswith("{"):
        return None
    try:
        value = json.loads(line)
    except json.JSONDecodeError:
        return None
    return value if isinstance(value, dict) else None


_INHERITING: list[OutputCapture] = []


def _threads_inherit_binding(capture: OutputCapture) -> None:
    """Threads started by a bound thread carry its function (patched once per process; the
    capture installed last is the one whose bindings count)."""
    patched = bool(_INHERITING)
    _INHERITING[:] = [capture]
    if patched:
        return
    original = threading.Thread.start

    def start(self: threading.Thread) -> None:
        for owner in reversed(_INHERITING):
            function = getattr(owner._local, "function", None) or getattr(
                threading.current_thread(), "_lanes_function", None
            )
            if function is not None:
                self._lanes_function = function  # type: ignore[attr-defined]
                break
        original(self)

    threading.Thread.start = start  # type: ignore[method-assign]
