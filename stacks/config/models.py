"""The model each lane's task calls, per environment: Bedrock model or inference profile, system
prompt, token limit, temperature, and the planning assumptions `lanectl plan` prices tokens with.

The consumer gets the settings (pipeline/settings/model.py); its role may invoke exactly these
models (stacks/constructs/consumer_grants.py), nothing else in Bedrock.
"""

from __future__ import annotations

from dataclasses import dataclass

from pipeline.domain.dependencies.model import TRIAGE_LABELS
from pipeline.settings.model import ModelSettings
from stacks.config.lanes import AI, ENGAGEMENT

INFERENCE_PROFILE_PREFIXES = ("us.", "eu.", "apac.", "us-gov.", "global.")
"""A model id with one of these prefixes names a cross-region inference profile, not a model."""

REPLY_PROMPT = (
    "You answer customers of a shop on WhatsApp, Messenger and Instagram. Reply in the customer's "
    "language, in at most three short sentences. If you do not know, say a person will follow up."
)
TRIAGE_PROMPT = (
    "You label comments on a business's social media posts. Answer with exactly one word, one of: "
    + ", ".join(TRIAGE_LABELS)
    + "."
)


@dataclass(frozen=True, kw_only=True)
class LaneModel:
    lane: str
    settings: ModelSettings
    input_tokens_per_call: int
    """Planning: the system prompt plus a typical prompt (what `lanectl plan` prices)."""
    output_tokens_per_call: int
    """Planning: a typical answer, at most `settings.max_tokens`."""

    def __post_init__(self) -> None:
        if self.input_tokens_per_call < 1 or not 1 <= self.output_tokens_per_call <= self.settings.max_tokens:
            raise ValueError(f"lane {self.lane}: planned tokens must be >= 1 and output at most max_tokens")

    @property
    def inference_profile(self) -> bool:
        return self.settings.model_id.startswith(INFERENCE_PROFILE_PREFIXES)

    @property
    def foundation_model(self) -> str:
        """The model a profile routes to (`eu.anthropic...` → `anthropic...`), or the model itself."""
        model_id = self.settings.model_id
        if self.inference_profile:
            return model_id.split(".", 1)[1]
        return model_id


def reply_model(model_id: str = "anthropic.claude-3-haiku-20240307-v1:0") -> LaneModel:
    return LaneModel(
        lane=AI,
        settings=ModelSettings(model_id=model_id, system_prompt=REPLY_PROMPT, max_tokens=300, temperature=0.3),
        input_tokens_per_call=250,
        output_tokens_per_call=80,
    )


def triage_model(model_id: str = "amazon.nova-micro-v1:0") -> LaneModel:
    return LaneModel(
        lane=ENGAGEMENT,
        settings=ModelSettings(model_id=model_id, system_prompt=TRIAGE_PROMPT, max_tokens=5, temperature=0.0),
        input_tokens_per_call=120,
        output_tokens_per_call=2,
    )


DEFAULT_MODELS = (reply_model(), triage_model())
