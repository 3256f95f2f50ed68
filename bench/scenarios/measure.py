"""Small measuring tools: percentiles, rates over time, and a probe on the local model.

The vendor probe is the model's own view of its traffic: it wraps the local fake of Bedrock's
Converse (local_aws/converse_fake.py), which every consumer's calls reach, and records
when each call started and ended, then calls through unchanged. Concurrency measured there is
what a real vendor would count against its quota, independent of the pipeline's own budget
bookkeeping.
"""

from __future__ import annotations

import contextlib
import math
import threading
import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any


def percentile(values: Sequence[float], q: float) -> float:
    """Nearest-rank percentile (q in 0..100); nan for no values."""
    if not values:
        return math.nan
    ordered = sorted(values)
    rank = max(1, math.ceil(q / 100 * len(ordered)))
    return ordered[min(len(ordered), rank) - 1]


def mean(values: Sequence[float]) -> float:
    return sum(values) / len(values) if values else math.nan


def per_second(times: Iterable[float], start: float, end: float, bin_seconds: float = 1.0) -> list[float]:
    """Events per second in consecutive bins from `start` to `end`."""
    bins = max(1, math.ceil((end - start) / bin_seconds))
    counts = [0] * bins
    for t in times:
        if start <= t < end:
            counts[min(bins - 1, int((t - start) // bin_seconds))] += 1
    return [c / bin_seconds for c in counts]


def peak_overlap(intervals: Iterable[tuple[float, float]]) -> int:
    """Most intervals open at the same instant."""
    events = []
    for start, end in intervals:
        events.append((start, 1))
        events.append((end, -1))
    events.sort(key=lambda e: (e[0], e[1]))  # an end before a start at the same instant
    open_, peak = 0, 0
    for _, delta in events:
        open_ += delta
        peak = max(peak, open_)
    return peak


def overlap_series(intervals: Sequence[tuple[float, float]], start: float, end: float, step: float) -> list[int]:
    """How many intervals are open at each step (for plots)."""
    out = []
    t = start
    while t < end:
        out.append(sum(1 for a, b in intervals if a <= t < b))
        t += step
    return out


@dataclass(frozen=True)
class VendorCall:
    start: float
    end: float
    prompt: str
    ok: bool
    in_progress_at_start: int
    """Calls already in progress when this one started (the vendor's concurrency at that moment)."""


@dataclass
class VendorProbe:
    calls: list[VendorCall] = field(default_factory=list)
    in_progress: int = 0
    peak: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def over(self, quota: int) -> int:
        """Calls that started while `quota` calls were already in progress: a vendor enforcing
        that quota would have refused them (429)."""
        return sum(1 for c in self.calls if c.in_progress_at_start >= quota)

    def intervals(self) -> list[tuple[float, float]]:
        return [(c.start, c.end) for c in self.calls]

    def for_prompt(self, text: str) -> list[VendorCall]:
        return [c for c in self.calls if text in c.prompt]


@contextlib.contextmanager
def vendor_probe() -> Iterator[VendorProbe]:
    """The model's own view of its traffic: every Converse call that reached the local runtime's
    fake of Bedrock (local_aws/converse_fake.py), with the prompt it carried."""
    from local_aws.converse_fake import FAKE

    probe = VendorProbe()
    original = FAKE.converse

    def converse(model_id: str, system: Any, messages: Any, inference: Any) -> dict[str, Any]:
        prompt = "".join(str(b.get("text", "")) for m in messages or () for b in m.get("content") or ())
        with probe._lock:
            before = probe.in_progress
            probe.in_progress += 1
            probe.peak = max(probe.peak, probe.in_progress)
        started = time.time()
        ok = False
        try:
            answer = original(model_id, system, messages, inference)
            ok = True
            return answer
        finally:
            ended = time.time()
            with probe._lock:
                probe.in_progress -= 1
                probe.calls.append(VendorCall(started, ended, prompt, ok, before))

    FAKE.converse = converse  # type: ignore[method-assign]
    try:
        yield probe
    finally:
        del FAKE.converse  # the class's method again


def fmt(value: float, digits: int = 1, unit: str = "") -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "n/a"
    if isinstance(value, float) and math.isinf(value):
        return "never"
    return f"{value:,.{digits}f}{unit}"
