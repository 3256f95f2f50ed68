"""The token counters against DynamoDB (moto): the share is never passed, one write a call."""

from __future__ import annotations

import boto3
import pytest

from pipeline import schema
from pipeline.adapters.token_windows import TokenCounters
from pipeline.domain.dependencies.token_rates import TokenKeeper, model_tokens

TABLE = "state"


@pytest.fixture
def dynamodb(aws):
    client = boto3.client("dynamodb")
    client.create_table(
        TableName=TABLE,
        KeySchema=[{"AttributeName": schema.PK, "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": schema.PK, "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
    )
    return client


def test_tokens_are_added_up_to_the_share_and_refused_past_it(dynamodb):
    counters = TokenCounters(dynamodb, TABLE)
    assert counters.add_tokens("rate#tokens#llm#0", 60, 100, 10.0) == 60
    assert counters.add_tokens("rate#tokens#llm#0", 40, 100, 10.0) == 100
    assert counters.add_tokens("rate#tokens#llm#0", 1, 100, 10.0) is None
    item = dynamodb.get_item(TableName=TABLE, Key={schema.PK: {"S": "rate#tokens#llm#0"}})["Item"]
    assert item["tokens"] == {"N": "100"}
    assert int(item[schema.TTL]["N"]) > 10


@pytest.mark.parametrize("tokens", [0, 101])
def test_a_count_that_cannot_fit_is_an_error_and_writes_nothing(dynamodb, tokens):
    with pytest.raises(ValueError, match="cannot fit"):
        TokenCounters(dynamodb, TABLE).add_tokens("rate#tokens#llm#0", tokens, 100, 10.0)
    assert dynamodb.scan(TableName=TABLE)["Items"] == []


def test_keepers_sharing_the_table_stay_within_a_slice(dynamodb):
    rate = model_tokens("llm", 1_100)
    counters = TokenCounters(dynamodb, TABLE)
    keepers = [TokenKeeper(counters, lambda: 5.0) for _ in range(2)]
    taken = sum(30 for i in range(8) if keepers[i % 2].take(rate, 30))
    assert taken == 90
