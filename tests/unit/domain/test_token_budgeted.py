"""A lane's model behind its tokens-a-minute budget: reserved before the call, a full window
defers the record (no call made), a prompt that could never fit fails for good, and the budget
is typed config per lane model."""

from __future__ import annotations

import pytest

from pipeline.domain.consumer.token_budgeted import TokenBudgeted
from pipeline.domain.dependencies.model import Completion
from pipeline.domain.dependencies.token_rates import TokenKeeper
from pipeline.domain.errors import DependencyBusy, PermanentError
from pipeline.settings.model import ModelSettings
from tests.unit.domain.test_token_rates import Clock, Counters


class Model:
    def __init__(self) -> None:
        self.prompts: list[str] = []

    def complete(self, prompt: str, *, timeout: float) -> Completion:
        self.prompts.append(prompt)
        return Completion(text="ok", input_tokens=3, output_tokens=1)


def _budgeted(counters: Counters, per_minute: int = 1_100) -> tuple[TokenBudgeted, Model]:
    model = Model()
    keeper = TokenKeeper(counters, Clock(0.0))
    # A slice's share is 100 tokens; each call reserves 40 + 1 ("Be.") + the prompt's estimate.
    return TokenBudgeted(model, keeper, model_id="m", system_prompt="Be.", max_tokens=40, per_minute=per_minute), model


def test_calls_reserve_until_the_window_is_full_then_defer_without_calling():
    counters = Counters()
    budgeted, model = _budgeted(counters)
    assert budgeted.complete("hi", timeout=5).text == "ok"
    assert budgeted.complete("hi", timeout=5).text == "ok"
    with pytest.raises(DependencyBusy, match="tokens a minute"):
        budgeted.complete("hi", timeout=5)
    assert model.prompts == ["hi", "hi"]
    assert counters.tokens == {"rate#tokens#m#0": 84}


def test_a_prompt_that_could_never_fit_fails_for_good_and_reserves_nothing():
    counters = Counters()
    budgeted, model = _budgeted(counters)
    with pytest.raises(PermanentError, match="exceed"):
        budgeted.complete("x" * 400, timeout=5)
    assert model.prompts == []
    assert counters.writes == 0


def test_a_counter_that_fails_defers_the_record():
    class Broken(Counters):
        def add_tokens(self, *args, **kwargs):
            raise ConnectionError("no table")

    budgeted, model = _budgeted(Broken())
    with pytest.raises(DependencyBusy, match="could not be counted"):
        budgeted.complete("hi", timeout=5)
    assert model.prompts == []


def test_a_lane_models_tokens_a_minute_is_none_or_enough_for_one_call():
    base = {"model_id": "m", "system_prompt": "Be.", "max_tokens": 100, "temperature": 0.0}
    assert ModelSettings(**base).tokens_per_minute is None
    assert ModelSettings(**base, tokens_per_minute=200_000).tokens_per_minute == 200_000
    with pytest.raises(ValueError, match="tokens_per_minute"):
        ModelSettings(**base, tokens_per_minute=1_000)
