"""What the harness plugs into a consumer handler: clients whose every call is recorded (and can be
made slow), the Lambda context it reads, a clock a test moves, moto made atomic per request, and
its loggers pointed at the current stdout.
"""

from __future__ import annotations

import logging
import sys
import threading
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import boto3
from moto.core.botocore_stubber import BotocoreStubber

from pipeline import settings
from pipeline.adapters.clients import Clients
from tests.support.aws import REGION

_ATOMIC = threading.RLock()


@contextmanager
def atomic_requests(monkeypatch: Any) -> Iterator[None]:
    """Make each moto request atomic, as each DynamoDB write (and transaction) is atomic in AWS.
    moto's in-process backend has no lock of its own, and a transaction there restores a snapshot
    of the whole table when it fails, which under real threads could undo another thread's write."""
    original = BotocoreStubber.process_request

    def locked(self: BotocoreStubber, request: Any) -> Any:
        with _ATOMIC:
            return original(self, request)

    monkeypatch.setattr(BotocoreStubber, "process_request", locked)
    yield


def repoint_consumer_logs() -> None:
    """Powertools binds a logger's stream handler to sys.stdout when the first Logger of a service
    is made; under pytest that may be a capture buffer closed since. Point consumer loggers at
    the current stdout, so a later test's log lines do not hit a closed file."""
    for name, logger in logging.Logger.manager.loggerDict.items():
        if name.startswith("consumer-") and isinstance(logger, logging.Logger):
            for handler in logger.handlers:
                if isinstance(handler, logging.StreamHandler):
                    # Not setStream: that flushes the old stream first, which may be closed.
                    handler.stream = sys.stdout


class Context:
    """The slice of the Lambda context the consumer reads."""

    def __init__(self, remaining_seconds: float) -> None:
        self._deadline = time.monotonic() + remaining_seconds

    def get_remaining_time_in_millis(self) -> int:
        return max(0, int((self._deadline - time.monotonic()) * 1000))


@dataclass
class Clock:
    now: float = field(default_factory=time.time)

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


@dataclass
class Calls:
    """Every API call the handler's clients made: (service, operation, params)."""

    made: list[tuple[str, str, dict[str, Any]]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def record(self, params: Mapping[str, Any], model: Any, **_: Any) -> None:
        with self.lock:
            self.made.append((model.service_model.service_name, model.name, dict(params)))

    def of(self, operation: str) -> list[dict[str, Any]]:
        with self.lock:
            return [params for _, name, params in self.made if name == operation]

    def count(self, service: str | None = None) -> int:
        with self.lock:
            return sum(1 for s, _, _ in self.made if service is None or s == service)

    def clear(self) -> None:
        with self.lock:
            self.made.clear()


@dataclass
class Slow:
    """Seconds added to every call of a service ("sqs", "dynamodb"), on botocore's `after-call`:
    moto has done the work, the answer just takes longer to arrive, as a slow dependency's does.
    (`after-call` is on every path a call can take; the runtime answers in-process calls before
    any `before-send`.)"""

    seconds: Mapping[str, float]

    def __call__(self, event_name: str, **_: Any) -> None:
        delay = self.seconds.get(event_name.split(".")[1], 0.0)
        if delay:
            time.sleep(delay)


def hooked_clients(
    calls: Calls, slow: Mapping[str, float] | None = None, environ: Mapping[str, str] | None = None
) -> Clients:
    """The consumer's clients, signing as its role (the credentials in `environ`), with every call
    recorded and some services slowed."""
    session = boto3.session.Session(region_name=REGION)
    session.events.register("provide-client-params.*.*", calls.record)
    if slow:
        session.events.register("after-call", Slow(slow))
    return Clients(region=REGION, credentials=settings.credentials(environ or {}), _session=session)
