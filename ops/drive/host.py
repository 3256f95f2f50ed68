"""A fresh local runtime per session, from a template synthesized once per process.

Synthesis takes about 6 s; deploying the cached template into a new emulator takes a second or
two, so the scenarios each get a runtime of their own. Several runtimes, one after another, in
one process (a pytest worker) need their output untangled: that is most of this module.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import sys
import threading
from collections.abc import Callable, Iterator
from typing import Any

from local_aws.capture import PassthroughStream
from ops.drive.session import Session


class Harness:
    """Synthesizes once; starts a fresh runtime per session. `close()` removes the synthesis."""

    def __init__(self) -> None:
        self._synthesized: Any = None

    @property
    def synthesized(self) -> Any:
        if self._synthesized is None:
            os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")
            from local_aws.synth import synthesize
            from stacks.config.environments import ENVIRONMENTS

            self._synthesized = synthesize(ENVIRONMENTS["local"])
        return self._synthesized

    def close(self) -> None:
        if self._synthesized is not None:
            shutil.rmtree(self._synthesized.outdir, ignore_errors=True)
            self._synthesized = None

    @contextlib.contextmanager
    def session(self, *, cli: bool = False, on_event: Callable[[str], None] | None = None) -> Iterator[Session]:
        """A fresh runtime. `cli=True` also serves the emulator on a port, for `lanectl`;
        `on_event` hears the runtime's events (alarm changes, errors) as they happen."""
        from local_aws.runtime import LocalRuntime

        logging.getLogger("werkzeug").setLevel(logging.CRITICAL)
        synthesized = self.synthesized
        _keep_function_logs_to_themselves(synthesized.env)
        stray = _StrayLines(sys.stdout)
        saved = sys.stdout
        sys.stdout = stray  # type: ignore[assignment]
        runtime = LocalRuntime(synthesized=synthesized, aws_port=0 if cli else None, on_event=on_event)
        try:
            runtime.start()
            _rebind_log_streams(synthesized.env)
            session = Session(runtime)
            stray.sinks.append(session.log.sink)
            try:
                yield session
            finally:
                # No new batches (each poller finishes its current long poll), then let the
                # invocations already running finish before the backend goes away.
                for player in runtime.players:
                    player.signal_stop()
                for player in runtime.players:
                    player.join(timeout=5)
                session.settle(timeout=15)
                runtime.stop()
        finally:
            sys.stdout = saved
            _share_function_logs_again(synthesized.env)


class _StrayLines(PassthroughStream):
    """Stands in for stdout while a runtime runs. The runtime routes each function's output by the
    thread it comes from; a task's own worker thread (the consumer runs tasks under a time limit on
    a thread of their own) is not bound to its function, so its JSON log lines would reach the
    terminal. They are kept with the session's lines instead; anything else passes through."""

    def __init__(self, passthrough: Any) -> None:
        super().__init__(passthrough)
        self.sinks: list[Callable[[str, str], None]] = []
        self._partial: dict[int, str] = {}

    def write(self, text: str) -> int:
        key = threading.get_ident()
        *lines, rest = (self._partial.pop(key, "") + text).split("\n")
        if rest:
            self._partial[key] = rest
        for line in lines:
            if line.startswith("{"):
                for sink in self.sinks:
                    sink("(task thread)", line)
            else:
                self._passthrough.write(line + "\n")
        return len(text)


def _keep_function_logs_to_themselves(env: Any) -> None:
    """A function's Powertools logger writes to its own stream, as on Lambda. As a named `logging`
    logger it would also propagate every record to the host process's root logger (pytest's log
    capture, when the scenarios run as tests), which formats each one again: enough extra work to
    change the timings measured. The loggers are made before the functions' cold starts create
    them, so Powertools picks them up as they are."""
    for name in _function_services(env):
        logging.getLogger(name).propagate = False


def _function_services(env: Any) -> list[str]:
    """The Powertools service names (and so `logging` logger names) of the functions."""
    return ["ingress", "jobs", "sweeper", *(f"consumer-{lane.name}" for lane in env.lanes)]


def _share_function_logs_again(env: Any) -> None:
    """Undo `_keep_function_logs_to_themselves` once the runtime is gone, so that anything else in
    the process using the same loggers (the unit tests, in one pytest process, read them through
    caplog) finds them propagating as `logging` made them."""
    for name in _function_services(env):
        logging.getLogger(name).propagate = True


def _rebind_log_streams(env: Any) -> None:
    """Point the functions' logging stream handlers (and any other bound to an earlier runtime) at
    the current stdout, this runtime's output capture.

    Powertools' Logger is a named `logging` logger whose stream handler keeps the `sys.stdout` of
    the moment it was first created: an earlier runtime's capture, or, in a pytest process, the
    capture of whichever test first made a logger of that name. This runtime would otherwise never
    see those functions' log lines. See the report's notes on the local runtime."""
    functions = set(_function_services(env))
    for name, logger in list(logging.Logger.manager.loggerDict.items()):
        for handler in getattr(logger, "handlers", []):
            if type(handler) is logging.StreamHandler and (name in functions or hasattr(handler.stream, "_capture")):
                handler.setStream(sys.stdout)
