"""The local runtime's model: Bedrock's Converse as moto answers it (local_aws/converse_fake.py),
with its latency, failures and rate limit set per run, and Bedrock's own error shapes."""

from __future__ import annotations

import time

import boto3
import pytest
import requests
from botocore.config import Config
from botocore.exceptions import ClientError

from local_aws.converse_fake import ERRORS, ConverseFake, ModelBehaviour
from local_aws.iam.asks import Lookups, asks
from tests.support.aws import REGION

CLAUDE = "anthropic.claude-3-haiku-20240307-v1:0"


@pytest.fixture
def client(aws, model):
    return boto3.client("bedrock-runtime", region_name=REGION, config=Config(retries={"total_max_attempts": 1}))


def _converse(client, text: str = "hello", system: str = "Be brief.", max_tokens: int = 100):
    return client.converse(
        modelId=CLAUDE,
        system=[{"text": system}],
        messages=[{"role": "user", "content": [{"text": text}]}],
        inferenceConfig={"maxTokens": max_tokens},
    )


def test_an_answer_has_bedrocks_shape_and_counts_its_tokens(client):
    answer = _converse(client, "hello there")
    assert answer["output"]["message"] == {
        "role": "assistant",
        "content": [{"text": "Thanks for your message! (11 characters read)"}],
    }
    assert answer["stopReason"] == "end_turn"
    assert answer["usage"] == {"inputTokens": 6, "outputTokens": 12, "totalTokens": 18}


def test_a_triage_prompt_gets_a_label_and_max_tokens_cuts_an_answer(client):
    labelled = _converse(client, "this is a scam", system="Answer with one label: question, complaint, spam, other.")
    assert labelled["output"]["message"]["content"][0]["text"] == "complaint"
    cut = _converse(client, "hello there", max_tokens=2)
    assert (cut["output"]["message"]["content"][0]["text"], cut["stopReason"]) == ("Thanks f", "max_tokens")


@pytest.mark.parametrize(
    ("code", "status"),
    [
        ("ThrottlingException", 429),
        ("ServiceUnavailableException", 503),
        ("ModelTimeoutException", 408),
        ("InternalServerException", 500),
        ("AccessDeniedException", 403),
        ("ValidationException", 400),
    ],
)
def test_failures_are_bedrocks_errors_with_its_status_and_message(client, model, code, status):
    model.configure(failure_rate=1.0, failure_code=code)
    with pytest.raises(ClientError) as raised:
        _converse(client)
    response = raised.value.response
    assert response["Error"] == {"Code": code, "Message": ERRORS[code]}
    assert response["ResponseMetadata"]["HTTPStatusCode"] == status
    assert response["ResponseMetadata"]["HTTPHeaders"]["x-amzn-errortype"] == code


def test_a_prompt_carrying_the_poison_fails_every_time_and_only_it(client, model):
    model.configure(rejects="POISON")
    for _ in range(3):
        with pytest.raises(ClientError, match="InternalServerException"):
            _converse(client, "my order POISON is late")
    assert _converse(client, "my order is late")["stopReason"] == "end_turn"


def test_latency_is_the_models_time_to_answer(client, model):
    model.configure(latency_ms=300)
    started = time.monotonic()
    _converse(client)
    assert time.monotonic() - started >= 0.3
    [call] = model.calls()
    assert call.ended - call.started >= 0.3


def test_offered_twice_its_rate_no_second_admits_more_than_the_rate(client, model):
    # Given a model that takes 10 calls a second, offered 20 a second for 3 seconds
    model.configure(requests_per_second=10)
    started = time.time()
    codes = []
    for n in range(60):
        time.sleep(max(0.0, started + n / 20 - time.time()))
        try:
            _converse(client)
        except ClientError as exc:
            codes.append(exc.response["Error"]["Code"])
    refused = len(codes)
    assert set(codes) == {"ThrottlingException"}
    # Then every sliding one-second window holds at most 10 answered calls, the rest were 429s
    answered = sorted(c.started for c in model.calls() if c.outcome == "ok")
    busiest = max(sum(1 for t in answered if s <= t < s + 1.0) for s in answered)
    assert busiest <= 10
    assert refused >= 25
    assert len(answered) + refused == 60


def test_settings_are_checked():
    fake = ConverseFake()
    with pytest.raises(ValueError, match="no setting"):
        fake.configure(latency=5)
    with pytest.raises(ValueError, match="failure_code"):
        fake.configure(failure_code="Teapot")
    with pytest.raises(ValueError, match="failure rate"):
        fake.configure(failure_rate=2)
    assert fake.behaviour == ModelBehaviour()


@pytest.fixture
def emulator_endpoint():
    """The emulator over HTTP, as `lanectl local` serves it."""
    from moto.server import ThreadedMotoServer

    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    try:
        host, port = server.get_host_and_port()
        yield f"http://{host}:{port}"
    finally:
        server.stop()


def test_another_process_sets_the_model_through_the_emulators_port(emulator_endpoint, model):
    url = f"{emulator_endpoint}/moto-api/local/model"
    changed = requests.post(url, json={"rejects": "POISON", "latency_ms": 5}, timeout=5)
    assert changed.status_code == 200
    assert (changed.json()["rejects"], model.behaviour.latency_ms) == ("POISON", 5)
    refused = requests.post(url, json={"latency": 5}, timeout=5)
    assert refused.status_code == 400
    assert "no setting latency" in refused.json()["error"]
    assert model.behaviour.rejects == "POISON"


def test_iam_asks_converse_for_the_model_or_the_profile_and_its_model():
    lookups = Lookups(secret_arn=str, topic_key=lambda _: None)
    [model] = asks("bedrock-runtime", "Converse", {"modelId": CLAUDE}, region="eu-west-1", account="1", lookups=lookups)
    assert (model.action, model.resource) == (
        "bedrock:InvokeModel",
        f"arn:aws:bedrock:eu-west-1::foundation-model/{CLAUDE}",
    )
    profile = asks(
        "bedrock-runtime", "Converse", {"modelId": f"eu.{CLAUDE}"}, region="eu-west-1", account="1", lookups=lookups
    )
    assert [a.resource for a in profile] == [
        f"arn:aws:bedrock:eu-west-1:1:inference-profile/eu.{CLAUDE}",
        f"arn:aws:bedrock:eu-west-1::foundation-model/{CLAUDE}",
    ]


def test_past_its_requests_a_minute_the_model_answers_throttling_until_the_minute_has_passed(client, model):
    model.configure(requests_per_minute=5)
    codes = []
    for _ in range(8):
        try:
            _converse(client)
            codes.append("ok")
        except ClientError as exc:
            codes.append(exc.response["Error"]["Code"])
    assert codes == ["ok"] * 5 + ["ThrottlingException"] * 3
