"""Token budgets: never more than a model's tokens a minute in any 60 s window, one counter write
per call, and a reservation that can never fit is refused at once with a clear error."""

from __future__ import annotations

import random

import pytest

from pipeline.domain.dependencies.token_rates import TokenKeeper, estimate_input_tokens, model_tokens, reservation


class Counters:
    """The state table's token items, in memory, counting every conditional write."""

    def __init__(self) -> None:
        self.tokens: dict[str, int] = {}
        self.writes = 0

    def add_tokens(self, key: str, tokens: int, at_most: int, expires_at: float) -> int | None:
        self.writes += 1
        if self.tokens.get(key, 0) + tokens > at_most:
            return None
        self.tokens[key] = self.tokens.get(key, 0) + tokens
        return self.tokens[key]


class Clock:
    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def _most_in_any_window(taken: list[tuple[float, int]], window: float) -> int:
    taken = sorted(taken)
    most, start, total = 0, 0, 0
    for at, tokens in taken:
        total += tokens
        while taken[start][0] <= at - window:
            total -= taken[start][1]
            start += 1
        most = max(most, total)
    return most


def test_a_reservation_is_max_tokens_plus_a_quarter_of_the_characters_rounded_up():
    assert estimate_input_tokens("a" * 9) == 3
    assert estimate_input_tokens("") == 1
    assert reservation(512, "s" * 40, "p" * 5) == 512 + 10 + 2


def test_twice_the_limit_offered_never_puts_more_than_the_limit_in_any_minute():
    rate = model_tokens("llm", 20_000)
    clock, counters = Clock(1_000.0), Counters()
    keepers = [TokenKeeper(counters, clock) for _ in range(3)]
    rng = random.Random(7)
    taken: list[tuple[float, int]] = []
    calls = 0
    # Offered: 40 000 tokens a minute for five minutes, in calls of 300 to 1 500 tokens.
    while clock.now < 1_300.0:
        tokens = rng.randint(300, 1_500)
        calls += 1
        if rng.choice(keepers).take(rate, tokens):
            taken.append((clock.now, tokens))
        clock.now += tokens / (40_000 / 60)
    assert _most_in_any_window(taken, 60.0) <= rate.limit
    assert counters.writes <= calls
    assert sum(t for _, t in taken) > 0


def test_a_refused_slice_is_not_asked_again_for_as_large_a_call_but_a_smaller_one_may_fit():
    rate = model_tokens("llm", 1_100)  # 9 slices of 100 tokens
    clock, counters = Clock(0.0), Counters()
    keeper = TokenKeeper(counters, clock)
    assert keeper.take(rate, 80)
    assert not keeper.take(rate, 50)
    writes = counters.writes
    assert not keeper.take(rate, 60)
    assert counters.writes == writes
    assert keeper.take(rate, 20)
    clock.now += rate.slice_seconds
    assert keeper.take(rate, 50)


@pytest.mark.parametrize("tokens", [0, -5, 101])
def test_a_reservation_that_can_never_fit_is_refused_with_an_error_and_writes_nothing(tokens):
    rate = model_tokens("llm", 1_100)
    counters = Counters()
    with pytest.raises(ValueError, match="token"):
        TokenKeeper(counters, Clock(0.0)).take(rate, tokens)
    assert counters.writes == 0
    assert counters.tokens == {}


def test_max_tokens_below_one_is_refused():
    with pytest.raises(ValueError, match="maxTokens"):
        reservation(0, "hello")
