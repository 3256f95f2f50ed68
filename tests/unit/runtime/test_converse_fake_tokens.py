"""The local model's tokens a minute: per model, counted as Bedrock counts them (input plus
maxTokens at the start of a call), refused with Bedrock's own ThrottlingException, which the
Converse adapter classes as transient (throttled)."""

from __future__ import annotations

import boto3
import pytest
from botocore.config import Config

from local_aws.converse_fake import TOO_MANY_TOKENS, ModelBehaviour
from pipeline.adapters.bedrock import ConverseModel
from pipeline.domain.dependencies.model import ModelThrottled
from pipeline.domain.errors import TransientError
from pipeline.settings import ModelSettings
from tests.support.aws import REGION

CLAUDE = "anthropic.claude-3-haiku-20240307-v1:0"
TITAN = "amazon.titan-text-lite-v1"


@pytest.fixture
def client(aws, model):
    return boto3.client("bedrock-runtime", region_name=REGION, config=Config(retries={"total_max_attempts": 1}))


def _model(client, model_id: str, max_tokens: int = 100) -> ConverseModel:
    return ConverseModel(
        client, ModelSettings(model_id=model_id, system_prompt="Be brief.", max_tokens=max_tokens, temperature=0.0)
    )


def test_past_its_tokens_a_minute_a_model_answers_too_many_tokens_and_the_adapter_calls_it_throttled(client, model):
    model.configure(tokens_per_minute=350)
    claude = _model(client, CLAUDE)
    # Each call counts 100 maxTokens + 3 ("Be brief.") + 2 ("hello") = 105 tokens.
    for _ in range(3):
        claude.complete("hello", timeout=5.0)
    with pytest.raises(ModelThrottled, match=TOO_MANY_TOKENS) as refused:
        claude.complete("hello", timeout=5.0)
    assert isinstance(refused.value, TransientError)
    assert [c.outcome for c in model.calls()] == ["ok"] * 3 + ["ThrottlingException"]
    # Another model has a budget of its own.
    _model(client, TITAN).complete("hello", timeout=5.0)


def test_a_refused_call_spends_no_tokens(client, model):
    model.configure(tokens_per_minute=150)
    claude = _model(client, CLAUDE)
    claude.complete("hello", timeout=5.0)
    for _ in range(2):
        with pytest.raises(ModelThrottled):
            claude.complete("hello", timeout=5.0)
    assert model.tokens_in_window(CLAUDE, model.calls()[-1].started + 1) == 105


def test_tokens_a_minute_must_be_positive_or_none():
    with pytest.raises(ValueError, match="tokens_per_minute"):
        ModelBehaviour(tokens_per_minute=0)
