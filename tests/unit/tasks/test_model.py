"""The lanes' model: Bedrock's Converse through adapters/bedrock.py, against the local fake of it,
and what each of Bedrock's errors means for the record."""

from __future__ import annotations

import pytest
from botocore.exceptions import ReadTimeoutError

from pipeline.adapters.bedrock import ConverseModel, converse_client
from pipeline.domain.dependencies.model import Completion, ModelRefused, ModelTimeout
from pipeline.domain.errors import PermanentError, TransientError, classify
from pipeline.settings import ModelSettings
from tests.support.aws import REGION

SETTINGS = ModelSettings(
    model_id="anthropic.claude-3-haiku-20240307-v1:0", system_prompt="Be brief.", max_tokens=50, temperature=0.2
)


@pytest.fixture
def converse(aws, model):
    return ConverseModel(converse_client(REGION, None, SETTINGS), SETTINGS)


def test_a_prompt_gets_the_models_answer_and_its_token_counts(converse, model):
    answer = converse.complete("hello there", timeout=5.0)
    assert answer == Completion("Thanks for your message! (11 characters read)", input_tokens=6, output_tokens=12)
    [call] = model.calls()
    assert (call.model_id, call.outcome) == (SETTINGS.model_id, "ok")


@pytest.mark.parametrize(
    ("code", "transient", "reason"),
    [
        ("ThrottlingException", True, "model_throttled"),
        ("ServiceUnavailableException", True, "model_unavailable"),
        ("InternalServerException", True, "model_unavailable"),
        ("ModelNotReadyException", True, "model_unavailable"),
        ("ModelTimeoutException", True, "model_timeout"),
        ("ValidationException", False, "model_rejected_input"),
        ("AccessDeniedException", True, "model_refused"),
    ],
)
def test_each_of_bedrocks_errors_is_classed(converse, model, code, transient, reason):
    # Given Bedrock answering every call with `code` (its own status and message)
    model.configure(failure_rate=1.0, failure_code=code)
    with pytest.raises((TransientError, PermanentError)) as raised:
        converse.complete("hello", timeout=5.0)
    # Then the record's failure is transient or permanent, with a reason that says which
    classified = classify(raised.value)
    assert (classified.transient, classified.reason) == (transient, reason)
    assert classified.message.startswith(code)
    # And the SDK did not retry it on its own: the lane's backoff is the retry
    assert len(model.calls()) == 1


def test_a_model_the_account_may_not_use_says_the_lane_should_stop(converse, model):
    model.configure(refuse=True)
    with pytest.raises(ModelRefused) as raised:
        converse.complete("hello", timeout=5.0)
    assert getattr(raised.value, "stops_lane", False) is True
    assert "You don't have access to the model" in str(raised.value)


def test_a_model_offered_only_through_inference_profiles_stops_the_lane_instead_of_failing_the_record(converse, model):
    # Given a model Bedrock serves only through an inference profile, named by its own id
    model.configure(on_demand=False)
    with pytest.raises((TransientError, PermanentError)) as raised:
        converse.complete("hello", timeout=5.0)
    # Then the record is not at fault (it would go to the DLQ, and so would every other): the lane
    # stops, with Bedrock's reason, until its model id is fixed
    classified = classify(raised.value)
    assert (classified.transient, classified.reason, classified.stops_lane) == (True, "model_refused", True)
    assert "inference profile" in classified.message


def test_a_stalled_connection_is_a_model_timeout():
    class Stalled:
        def converse(self, **_):
            raise ReadTimeoutError(endpoint_url="https://bedrock-runtime.eu-west-1.amazonaws.com")

    with pytest.raises(ModelTimeout) as raised:
        ConverseModel(Stalled(), SETTINGS).complete("hello", timeout=5.0)
    assert (classify(raised.value).transient, classify(raised.value).reason) == (True, "model_timeout")


def test_a_call_with_too_little_time_left_is_not_made(converse, model):
    with pytest.raises(ModelTimeout) as raised:
        converse.complete("hello", timeout=0.1)
    assert classify(raised.value).reason == "model_timeout"
    assert model.calls() == []


def test_the_request_carries_the_lanes_system_prompt_and_limits():
    seen = {}

    class Recording:
        def converse(self, **request):
            seen.update(request)
            return {
                "output": {"message": {"content": [{"text": "hi"}]}},
                "usage": {"inputTokens": 3, "outputTokens": 1},
            }

    assert ConverseModel(Recording(), SETTINGS).complete("hello", timeout=5.0) == Completion("hi", 3, 1)
    assert seen == {
        "modelId": SETTINGS.model_id,
        "system": [{"text": "Be brief."}],
        "messages": [{"role": "user", "content": [{"text": "hello"}]}],
        "inferenceConfig": {"maxTokens": 50, "temperature": 0.2},
    }
