"""The Lambda service's SQS poller for one event source mapping.

It reads the mapping from moto's Lambda API every second (so `lanectl lane pause/resume` and a
ramped MaximumConcurrency take effect), long-polls the queue through the SQS API, batches by
batch size and window, and never runs more than MaximumConcurrency batches at once. The event it
hands the function and what it deletes afterwards are `event_source`'s, the one emulation of the
mapping's contract. Visibility, delays, receive counts and redrive are the emulator's own SQS
semantics; nothing here bypasses them.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from local_aws import event_source
from local_aws.functions import FunctionHost

MAX_RECEIVE = event_source.MAX_MESSAGES
POLL_WAIT_SECONDS = 1
MAPPING_REFRESH_SECONDS = 1.0


@dataclass(frozen=True)
class MappingState:
    enabled: bool
    batch_size: int
    window_seconds: float
    max_concurrency: int
    report_failures: bool

    @classmethod
    def from_moto(cls, mapping: dict[str, Any]) -> MappingState:
        scaling = mapping.get("ScalingConfig") or {}
        state = mapping.get("State", "Enabled")
        return cls(
            enabled=state in ("Enabled", "Enabling", "Updating") and mapping.get("Enabled", True) is not False,
            batch_size=int(mapping.get("BatchSize", 10)),
            window_seconds=float(mapping.get("MaximumBatchingWindowInSeconds") or 0),
            max_concurrency=int(scaling.get("MaximumConcurrency", 1000)),
            report_failures="ReportBatchItemFailures" in (mapping.get("FunctionResponseTypes") or []),
        )


@dataclass
class MappingStats:
    batches: int = 0
    records: int = 0
    deleted: int = 0
    reported_failures: int = 0
    failed_invocations: int = 0
    in_flight: int = 0
    peak_in_flight: int = 0
    over_budget: int = 0
    """Times a batch started while MaximumConcurrency batches were already running: must stay 0."""


class MappingPlayer:
    def __init__(
        self,
        *,
        uuid: str,
        queue_url: str,
        queue_arn: str,
        function: FunctionHost,
        lambda_client: Any,
        sqs_client: Any,
        on_error: Callable[[str], None],
        read_mapping: Callable[[str], dict[str, Any]] | None = None,
    ) -> None:
        self.uuid = uuid
        self._read_mapping = read_mapping or (lambda uuid: self._lambda.get_event_source_mapping(UUID=uuid))
        self.queue_url = queue_url
        self.queue_arn = queue_arn
        self.function = function
        self._lambda = lambda_client
        self._sqs = sqs_client
        self._on_error = on_error
        self._stop = threading.Event()
        self._slots = threading.Condition()
        self._state: MappingState | None = None
        self._state_read_at = 0.0
        self.stats = MappingStats()
        self._thread = threading.Thread(target=self._loop, name=f"esm-{uuid[:8]}", daemon=True)
        self._workers: list[threading.Thread] = []

    def start(self) -> None:
        self._thread.start()

    def signal_stop(self) -> None:
        """Take no more batches; batches already running finish (or time out) on their own."""
        self._stop.set()
        with self._slots:
            self._slots.notify_all()

    def join(self, timeout: float) -> None:
        self._thread.join(timeout=max(0.0, timeout))

    def state(self) -> MappingState:
        now = time.monotonic()
        if self._state is None or now - self._state_read_at >= MAPPING_REFRESH_SECONDS:
            self._state = MappingState.from_moto(self._read_mapping(self.uuid))
            self._state_read_at = now
        return self._state

    def _loop(self) -> None:
        while not self._stop.is_set():
            try:
                state = self.state()
                if not state.enabled:
                    self._stop.wait(0.5)
                    continue
                if not self._wait_for_slot(state):
                    continue
                batch = self._receive_batch(state)
                if batch:
                    self._dispatch(batch, state)
            except Exception as exc:  # keep polling: a poller that dies strands the lane
                self._on_error(f"mapping {self.uuid}: {type(exc).__name__}: {exc}")
                self._stop.wait(1)

    def _wait_for_slot(self, state: MappingState) -> bool:
        with self._slots:
            while self.stats.in_flight >= state.max_concurrency and not self._stop.is_set():
                self._slots.wait(timeout=0.5)
                state = self.state()
            return not self._stop.is_set()

    def _receive_batch(self, state: MappingState) -> list[dict[str, Any]]:
        batch: list[dict[str, Any]] = []
        window_ends = time.monotonic() + state.window_seconds
        while len(batch) < state.batch_size and not self._stop.is_set():
            wait = POLL_WAIT_SECONDS if not batch else max(0, min(POLL_WAIT_SECONDS, window_ends - time.monotonic()))
            batch.extend(
                event_source.receive(
                    self._sqs,
                    self.queue_url,
                    min(MAX_RECEIVE, state.batch_size - len(batch)),
                    wait_seconds=round(wait),
                )
            )
            if not batch or time.monotonic() >= window_ends:
                break
        return batch

    def _dispatch(self, messages: list[dict[str, Any]], state: MappingState) -> None:
        with self._slots:
            if self.stats.in_flight >= state.max_concurrency:
                self.stats.over_budget += 1
            self.stats.in_flight += 1
            self.stats.peak_in_flight = max(self.stats.peak_in_flight, self.stats.in_flight)
            self.stats.batches += 1
            self.stats.records += len(messages)
        worker = threading.Thread(target=self._invoke, args=(messages, state), daemon=True)
        worker.start()

    def _invoke(self, messages: list[dict[str, Any]], state: MappingState) -> None:
        try:
            settled = event_source.deliver(
                self._sqs,
                self.queue_url,
                self.queue_arn,
                messages,
                self.function.invoke,
                report_failures=state.report_failures,
            )
            if settled.failed is None:
                # nothing deleted: every message comes back after its visibility timeout
                self.stats.failed_invocations += 1
                if settled.malformed:
                    result = settled.outcome.result if settled.outcome is not None else None
                    self._on_error(f"{self.function.config.name}: malformed batch response {result!r}")
                return
            self.stats.reported_failures += len(settled.failed)
            self.stats.deleted += len(settled.deleted)
        except Exception as exc:
            self._on_error(f"{self.function.config.name}: {type(exc).__name__}: {exc}")
        finally:
            with self._slots:
                self.stats.in_flight -= 1
                self._slots.notify_all()
