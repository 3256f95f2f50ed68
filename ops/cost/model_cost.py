"""What the lanes' model calls cost a month: tokens in and out at Bedrock's on-demand prices.

Each message on a lane with a model is priced as one call of the tokens its model's planning
assumptions state (stacks/config/models.py). For the ai lane that is an upper bound: a burst
coalesced into one turn makes one call, not one per message. What a lane really spends is its
`ModelInputTokens` and `ModelOutputTokens` metrics. `lanectl plan` also prints one call's price
(`per_call`): on the ai lane, what one reply turn costs at the planned tokens, and what prompt
caching would save of it (`caching`).
"""

from __future__ import annotations

from dataclasses import dataclass

from ops.cost.prices import LIST_PRICES, MODEL_PRICES, PROMPT_CACHING, ModelPrice, Prices
from stacks.config.environments import Environment
from stacks.config.models import LaneModel

CHARACTERS_PER_TOKEN = 4
"""How the plan counts a system prompt's tokens (Bedrock's models come close to it for English)."""


@dataclass(frozen=True)
class ModelCost:
    lane: str
    model_id: str
    calls: float
    input_tokens: float
    output_tokens: float
    price: ModelPrice | None
    """None: a model with no price here; the plan warns rather than guess."""

    @property
    def per_call(self) -> float:
        """One call at the planned tokens: on the ai lane, one reply turn (a whole burst)."""
        return self.total / self.calls if self.calls else 0.0

    @property
    def total(self) -> float:
        if self.price is None:
            return 0.0
        million = 1_000_000
        return (
            self.input_tokens / million * self.price.input_per_million
            + self.output_tokens / million * self.price.output_per_million
        )


def model_costs(env: Environment, average_fraction: float, prices: Prices = LIST_PRICES) -> dict[str, ModelCost]:
    costs = {}
    for model in env.models:
        lane = env.lane(model.lane)
        calls = lane.traffic.peak_per_second * average_fraction * prices.seconds_per_month
        costs[model.lane] = ModelCost(
            lane=model.lane,
            model_id=model.settings.model_id,
            calls=calls,
            input_tokens=calls * model.input_tokens_per_call,
            output_tokens=calls * model.output_tokens_per_call,
            price=MODEL_PRICES.get(model.foundation_model),
        )
    return costs


def model_warnings(env: Environment) -> list[str]:
    return [
        f"{model.lane}: no price for model {model.settings.model_id} in ops/cost/prices.py MODEL_PRICES; its tokens "
        "are not in the total"
        for model in env.models
        if model.foundation_model not in MODEL_PRICES
    ]


def caching(model: LaneModel, cost: ModelCost) -> str:
    """What Bedrock's prompt caching would save a call of `model`: the static prefix it could cache
    is the lane's system prompt (the conversation after it changes every turn)."""
    found = PROMPT_CACHING.get(model.foundation_model)
    if found is None:
        return f"prompt caching: {model.foundation_model} has none on Bedrock; nothing to save"
    prefix = len(model.settings.system_prompt) // CHARACTERS_PER_TOKEN
    if prefix < found.min_prefix_tokens:
        return (
            f"prompt caching: {model.foundation_model} caches a prefix of at least {found.min_prefix_tokens:,} "
            f"tokens; the system prompt is about {prefix:,} (of {model.input_tokens_per_call:,} planned a call), "
            "so nothing is cached and nothing saved"
        )
    assert cost.price is not None
    saved = prefix / 1_000_000 * cost.price.input_per_million * (1 - found.read_share)
    return (
        f"prompt caching: the system prompt's {prefix:,} tokens read from the cache save at most "
        f"${saved:.6f} a call (${saved * cost.calls:,.2f} a month), each cache write costing "
        f"{found.write_share:g} times an input token"
    )
