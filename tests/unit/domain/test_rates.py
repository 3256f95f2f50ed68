"""Rate budgets: never more than a key's rate in any window, wherever the window starts, one
counter write per call, and a key slowed by the dependency's refusals grows back."""

from __future__ import annotations

import random

import pytest

from pipeline.domain.dependencies.rates import Rate, RateKeeper, model_requests, slice_at, whatsapp_number


class Counters:
    """The state table's slice items, in memory, counting every conditional write."""

    def __init__(self) -> None:
        self.calls: dict[str, int] = {}
        self.writes = 0

    def add_one(self, key: str, below: int, expires_at: float) -> int | None:
        self.writes += 1
        if self.calls.get(key, 0) >= below:
            return None
        self.calls[key] = self.calls.get(key, 0) + 1
        return self.calls[key]

    def fill(self, keys: list[str], calls: int, expires_at: float) -> None:
        for key in keys:
            self.writes += 1
            self.calls[key] = calls


class Clock:
    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def _most_in_any_window(times: list[float], window: float) -> int:
    times = sorted(times)
    most, start = 0, 0
    for end, at in enumerate(times):
        while times[start] <= at - window:
            start += 1
        most = max(most, end - start + 1)
    return most


@pytest.mark.parametrize("rate", [whatsapp_number("1098765", 80), whatsapp_number("1", 3), model_requests("llm", 100)])
def test_offered_twice_the_rate_no_window_anywhere_holds_more_than_the_rate(rate: Rate):
    # Given three instances sharing the counters, offered twice the rate at random moments
    counters, clock, rng = Counters(), Clock(1_000_000.0), random.Random(7)
    keepers = [RateKeeper(counters, clock) for _ in range(3)]
    windows = 20
    offered = sorted(rng.uniform(0, windows * rate.window_seconds) for _ in range(2 * rate.limit * windows))
    granted: list[float] = []
    for offset in offered:
        clock.now = 1_000_000.0 + offset
        if rng.choice(keepers).take(rate):
            granted.append(clock.now)
    # Then no window of the rate's length, wherever it starts, holds more than the rate, even
    # with one slice of slack for the time to reach the dependency
    assert _most_in_any_window(granted, rate.window_seconds + rate.slice_seconds) <= rate.limit
    # And the slices were used to their throughput, at one conditional write per call or fewer
    assert len(granted) >= 0.9 * rate.throughput * windows
    assert counters.writes <= len(granted) + len(keepers) * rate.slice_count * (windows + 1)


def test_a_slice_an_instance_filled_or_found_full_costs_it_no_more_writes():
    counters, clock = Counters(), Clock(500.0)
    rate = whatsapp_number("1098765", 80)
    filler, other = RateKeeper(counters, clock), RateKeeper(counters, clock)
    results = [filler.take(rate) for _ in range(50)]
    assert results.count(True) == rate.per_slice() == 7
    assert counters.writes == 7  # the seventh count said the slice is full: no refused write
    assert not any(other.take(rate) for _ in range(50))
    assert counters.writes == 8  # another instance pays one refused write a slice, once
    clock.now = slice_at(rate, clock.now).ends_at
    assert filler.take(rate)
    assert other.take(rate)


def test_a_refusal_halves_the_keys_rate_and_it_grows_back_a_twentieth_a_slice():
    counters, clock = Counters(), Clock(0.0)
    rate = whatsapp_number("1098765", 80)
    keeper = RateKeeper(counters, clock)
    keeper.throttled(rate)
    keeper.throttled(rate)  # the same slice's refusals say the same thing once
    assert keeper.allowed(rate) == 40
    assert rate.per_slice(keeper.allowed(rate)) == 3
    clock.now += rate.slice_seconds
    keeper.throttled(rate)
    assert keeper.allowed(rate) == 20
    for _ in range(20):
        clock.now += rate.slice_seconds
        assert keeper.take(rate)
    assert keeper.allowed(rate) == 80


def test_a_rate_below_three_a_window_is_refused():
    with pytest.raises(ValueError, match="limit must be >= 3"):
        Rate("meta#1", 2)
