"""Rate budgets: at most `limit` calls to a key in any window of `window_seconds`, the arithmetic
free of any store (adapters/rate_windows.py keeps the counters).

A concurrency budget (domain/dependencies/budgets.py) bounds calls at once; a dependency also bounds calls a
second (WhatsApp's throughput per business phone number) or a minute (Bedrock's requests per
minute). Such a budget is counted in fixed slices of the window, one counter item per key per
slice, each call taken with one conditional ADD: one write unit a call (adapters/rate_windows.py).

Fixed windows of the full length would let `limit` calls end one window and `limit` more start
the next, twice the rate within a second that straddles them, which Meta refuses (130429). So the
window is cut into `slice_count` slices, each allowed `limit // (slice_count + 2)` calls. Any
window of `window_seconds`, wherever it starts, overlaps at most `slice_count + 1` slices; the
one slice more is slack for the time between counting a call and the dependency receiving it,
and for the clocks of different instances, which place slices slightly apart. The price is
throughput: `slice_count * (limit // (slice_count + 2))`, 63 a second of WhatsApp's 80 with nine
slices.

A key's allowed rate also falls when the dependency says it is over (a 429, a
ThrottlingException) and climbs back on its own: additive increase, multiplicative decrease
(`Aimd`), held by each instance for the keys it calls, so a throttled instance backs off at once
without a write, and the shared counters still bound the sum. When the refusal says the key itself
is over (Meta's throughput error for a business number), the other instances must slow down too:
the refusing instance marks the key's shared slices full for a while (`RateKeeper.throttled` with
`hold_seconds`, one write a slice: nine for a second of WhatsApp's), so every instance's calls on
the key are deferred until it passes.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

RATE_PREFIX = "rate#"
CALLS = "calls"
DEFAULT_SLICES = 9
MIN_LIMIT = 3


@dataclass(frozen=True)
class Rate:
    key: str
    limit: int
    """Calls allowed in any window of `window_seconds`."""
    window_seconds: float = 1.0
    slices: int = DEFAULT_SLICES

    def __post_init__(self) -> None:
        if self.limit < MIN_LIMIT:
            raise ValueError(f"rate {self.key!r}: limit must be >= {MIN_LIMIT} (a slice needs a share of one call)")
        if self.window_seconds <= 0:
            raise ValueError(f"rate {self.key!r}: window_seconds must be > 0")
        if self.slices < 1:
            raise ValueError(f"rate {self.key!r}: slices must be >= 1")

    @property
    def slice_count(self) -> int:
        """Slices actually used: never so many that a slice's share would be no call at all."""
        return min(self.slices, self.limit - 2)

    @property
    def slice_seconds(self) -> float:
        return self.window_seconds / self.slice_count

    def per_slice(self, allowed: float | None = None) -> int:
        """Calls one slice may take when the key is allowed `allowed` calls a window (its limit
        unless slowed); never below one, so a slowed key still probes the dependency."""
        rate = self.limit if allowed is None else min(self.limit, allowed)
        return max(1, math.floor(rate / (self.slice_count + 2)))

    @property
    def throughput(self) -> int:
        """The most calls a window takes when every slice is full."""
        return self.slice_count * self.per_slice()


@dataclass(frozen=True)
class Slice:
    key: str
    """The counter item's key: the rate's key and the slice's number."""
    ends_at: float


def slice_at(rate: Rate, now: float) -> Slice:
    number = math.floor(now / rate.slice_seconds)
    return Slice(f"{RATE_PREFIX}{rate.key}#{number}", (number + 1) * rate.slice_seconds)


def whatsapp_number(business_id: str, per_second: int) -> Rate:
    """Meta's throughput per business phone number (Send API pages alike)."""
    return Rate(f"meta#{business_id}", per_second, 1.0)


def model_requests(dependency: str, per_minute: int) -> Rate:
    return Rate(f"model#{dependency}", per_minute, 60.0)


DECREASE = 0.5
"""What a key's allowed rate is multiplied by when the dependency refuses a call as over its rate."""
INCREASE_SHARE = 0.05
"""What a key's allowed rate grows by, as a share of its limit, each slice it takes a call in."""


@dataclass
class Aimd:
    """One instance's allowed rate per key: halved on a refusal (once a slice, since the refusals
    of calls already in flight say the same thing), grown back by a twentieth of the limit each
    later slice the key takes a call in."""

    _allowed: dict[str, float] = field(default_factory=dict)
    _decreased_in: dict[str, str] = field(default_factory=dict)
    _increased_in: dict[str, str] = field(default_factory=dict)

    def allowed(self, rate: Rate) -> float:
        return self._allowed.get(rate.key, float(rate.limit))

    def took(self, rate: Rate, now: float) -> None:
        current = self._allowed.get(rate.key)
        here = slice_at(rate, now).key
        if current is None or here in (self._decreased_in.get(rate.key), self._increased_in.get(rate.key)):
            return
        self._increased_in[rate.key] = here
        grown = current + max(1.0, rate.limit * INCREASE_SHARE)
        if grown >= rate.limit:
            del self._allowed[rate.key]
        else:
            self._allowed[rate.key] = grown

    def throttled(self, rate: Rate, now: float) -> None:
        here = slice_at(rate, now).key
        if self._decreased_in.get(rate.key) == here:
            return
        self._decreased_in[rate.key] = here
        self._allowed[rate.key] = max(1.0, self.allowed(rate) * DECREASE)


class SliceCounter(Protocol):
    def add_one(self, key: str, below: int, expires_at: float) -> int | None:
        """Count one call on `key` if it holds fewer than `below`: the count after it, or None
        when it was full."""
        ...

    def fill(self, keys: Sequence[str], calls: int, expires_at: float) -> None:
        """Mark each slice as holding `calls` (full to every taker), as best it can: a slice
        not marked only lets calls through that the dependency may refuse again."""
        ...


def held_slices(rate: Rate, now: float, hold_seconds: float) -> list[Slice]:
    """The slices from the one `now` is in until `hold_seconds` later."""
    first = math.floor(now / rate.slice_seconds)
    last = math.ceil((now + hold_seconds) / rate.slice_seconds) - 1
    return [
        Slice(f"{RATE_PREFIX}{rate.key}#{number}", (number + 1) * rate.slice_seconds)
        for number in range(first, max(first, last) + 1)
    ]


class RateKeeper:
    """One instance's view of its rate budgets: asks the shared counters, remembers a slice it
    found full, or filled, until the slice ends (so a refused key costs this instance at most one
    write a slice, not one a call), and keeps each key's allowed rate (Aimd)."""

    def __init__(self, counter: SliceCounter, clock: Callable[[], float]) -> None:
        self._counter = counter
        self._clock = clock
        self._aimd = Aimd()
        self._full_until: dict[str, float] = {}
        self._lock = threading.Lock()

    def take(self, rate: Rate) -> bool:
        now = self._clock()
        here = slice_at(rate, now)
        with self._lock:
            if self._full_until.get(rate.key, 0.0) > now:
                return False
            below = rate.per_slice(self._aimd.allowed(rate))
        counted = self._counter.add_one(here.key, below, here.ends_at)
        with self._lock:
            if counted is None or counted >= below:
                # Full, whether this instance found it so or filled it: no more writes this slice.
                self._full_until[rate.key] = here.ends_at
            if counted is None:
                return False
            self._aimd.took(rate, now)
        return True

    def throttled(self, rate: Rate, hold_seconds: float = 0.0) -> None:
        """The dependency refused a call as over its rate: this instance's allowed rate halves.
        `hold_seconds`: the refusal says the key itself is over (Meta's throughput for a number),
        so every instance's calls on it wait that long: the shared slices are marked full, at one
        write a slice, once an instance (a refusal of a call already in flight says nothing new)."""
        now = self._clock()
        with self._lock:
            self._aimd.throttled(rate, now)
            if hold_seconds <= 0:
                return
            held = held_slices(rate, now, hold_seconds)
            if self._full_until.get(rate.key, 0.0) >= held[-1].ends_at - rate.slice_seconds:
                return  # this instance held the key through (nearly) as long already
            self._full_until[rate.key] = held[-1].ends_at
        self._counter.fill([s.key for s in held], rate.limit, held[-1].ends_at)

    def allowed(self, rate: Rate) -> float:
        with self._lock:
            return self._aimd.allowed(rate)
