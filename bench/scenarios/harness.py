"""What the scenarios add to driving the runtime (ops/drive): where their plots go, producers on
several connections, a sampler of gauges over time, and a retry for the emulator's SQS races.

Each scenario starts its runtime with `harness.session()`; the `Session` it gets (ops/drive) is
the same one `make demo` drives.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ops import drive


class Harness(drive.Harness):
    """ops/drive's harness, plus the directory the scenarios draw their plots in (None: no plots)."""

    def __init__(self, *, plot_dir: Path | None = None) -> None:
        super().__init__()
        self.plot_dir = plot_dir


def sweeper_grace(grace: float) -> Callable[[dict[str, str]], None]:
    """A change to the sweeper's configuration: rows pending `grace` seconds are replayed (its
    patience raised to at least that), as an operator would shorten it for a fast run."""

    def change(variables: dict[str, str]) -> None:
        settings = json.loads(variables["SWEEPER_SETTINGS"])
        settings["grace_seconds"] = grace
        settings["patience_seconds"] = max(grace, settings["patience_seconds"])
        variables["SWEEPER_SETTINGS"] = json.dumps(settings)

    return change


def fan_out(work: list[Callable[[], Any]], threads: int) -> list[Any]:
    """Run callables on a few threads (a producer with `threads` connections); results in order."""
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=max(1, threads), thread_name_prefix="producer") as pool:
        return list(pool.map(lambda fn: fn(), work))


def calm(call: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """Call the emulator's SQS, retrying the error moto raises when a call races a change to the
    same queue in another thread ("dictionary changed size during iteration"); AWS has no such
    failure. (DynamoDB calls take the runtime's lock instead: local_aws/moto_patches.py. SQS
    calls cannot: a long poll would hold it for seconds.)"""
    for _ in range(9):
        try:
            return call(*args, **kwargs)
        except RuntimeError as exc:
            if "changed size during iteration" not in str(exc):
                raise
            time.sleep(0.05)
    return call(*args, **kwargs)


@dataclass
class Sampler:
    """Samples named gauges every `interval` seconds on a background thread (a time series for the
    plots: queue depth, consumers in flight, ...)."""

    gauges: Mapping[str, Callable[[], float]]
    interval: float = 0.25
    times: list[float] = field(default_factory=list)
    values: dict[str, list[float]] = field(default_factory=dict)
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def __enter__(self) -> Sampler:
        self.values = {name: [] for name in self.gauges}
        self._thread = threading.Thread(target=self._loop, name="scenario-sampler", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def _loop(self) -> None:
        while not self._stop.is_set():
            now = time.time()
            row = {}
            try:
                row = {name: float(gauge()) for name, gauge in self.gauges.items()}
            except Exception:  # a gauge read racing a queue change: skip this sample
                row = {}
            if row:
                self.times.append(now)
                for name, value in row.items():
                    self.values[name].append(value)
            self._stop.wait(self.interval)

    def peak(self, name: str) -> float:
        return max(self.values.get(name) or [0.0])
