"""The scenario meter charges write units as on-demand DynamoDB does, to the group that made the
request, and a client metered twice is counted once by each meter that claims it."""

from __future__ import annotations

import boto3
import pytest
from moto import mock_aws

from bench.scenarios.metering import Meter

TABLE = "metered"


@pytest.fixture
def dynamodb():
    with mock_aws():
        client = boto3.client("dynamodb", region_name="us-east-1")
        client.create_table(
            TableName=TABLE,
            KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
            AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
            BillingMode="PAY_PER_REQUEST",
        )
        yield client


def _meter() -> Meter:
    return Meter(lambda: boto3.client("dynamodb", region_name="us-east-1"))


def test_a_standard_write_costs_a_unit_per_started_kilobyte_and_a_transactional_one_twice(dynamodb):
    meter = _meter()
    meter.attach(dynamodb, lambda *_: "consumer")

    dynamodb.put_item(TableName=TABLE, Item={"pk": {"S": "msg#small"}})
    dynamodb.put_item(TableName=TABLE, Item={"pk": {"S": "msg#large"}, "body": {"S": "x" * 1500}})
    dynamodb.transact_write_items(TransactItems=[{"Put": {"TableName": TABLE, "Item": {"pk": {"S": "lease#a"}}}}])

    usage = meter.usage["consumer"]
    assert usage.wcu == 1 + 2 + 2
    assert usage.wcu_by_item == {"PutItem msg": 3, "TransactWriteItems lease": 2}
    assert usage.count("dynamodb") == 3


def test_a_client_metered_by_two_meters_is_charged_only_to_the_meter_that_claims_the_request(dynamodb):
    claiming, declining = _meter(), _meter()
    declining.attach(dynamodb, lambda *_: None)
    claiming.attach(dynamodb, lambda *_: "common design")

    dynamodb.put_item(TableName=TABLE, Item={"pk": {"S": "msg#one"}})

    assert claiming.usage["common design"].wcu == 1
    assert declining.usage == {}
