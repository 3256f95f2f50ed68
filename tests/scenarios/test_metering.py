"""The scenario meter charges write units as on-demand DynamoDB does, to the group that made the
request, and a client metered twice is counted once by each meter that claims it."""

from __future__ import annotations

import time

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


def test_storage_is_what_each_write_leaves_until_its_own_ttl_and_an_item_without_one_is_counted_apart(dynamodb):
    meter = _meter()
    meter.attach(dynamodb, lambda *_: "consumer")
    now = time.time()
    ten_days = {"N": str(int(now + 10 * 86_400))}

    dynamodb.put_item(TableName=TABLE, Item={"pk": {"S": "msg#kept"}, "body": {"S": "x" * 924}, "expires_at": ten_days})
    dynamodb.put_item(TableName=TABLE, Item={"pk": {"S": "lease#forever"}})

    usage = meter.usage["consumer"]
    item = len("pk") + len("msg#kept") + len("body") + 924 + len("expires_at") + 6  # ten digits: 6 bytes
    assert usage.kib_days_by_table[TABLE] == pytest.approx((item + 100) / 1024 * 10, rel=1e-3)
    assert usage.forever_kib == {"lease": pytest.approx((len("pk") + len("lease#forever") + 100) / 1024)}


def test_rewriting_an_item_charges_only_the_storage_it_adds(dynamodb):
    meter = _meter()
    meter.attach(dynamodb, lambda *_: "consumer")
    expiry = {"N": str(int(time.time() + 86_400))}
    dynamodb.put_item(TableName=TABLE, Item={"pk": {"S": "msg#grows"}, "body": {"S": "x" * 100}, "expires_at": expiry})
    first = meter.usage["consumer"].kib_days_by_table[TABLE]

    dynamodb.put_item(TableName=TABLE, Item={"pk": {"S": "msg#grows"}, "body": {"S": "x" * 1124}, "expires_at": expiry})

    assert meter.usage["consumer"].kib_days_by_table[TABLE] - first == pytest.approx(1.0, rel=1e-2)


def test_read_units_are_kept_by_the_table_read(dynamodb):
    meter = _meter()
    meter.attach(dynamodb, lambda *_: "consumer")
    dynamodb.put_item(TableName=TABLE, Item={"pk": {"S": "msg#read"}})

    dynamodb.get_item(TableName=TABLE, Key={"pk": {"S": "msg#read"}}, ConsistentRead=True)
    dynamodb.batch_get_item(RequestItems={TABLE: {"Keys": [{"pk": {"S": "msg#read"}}]}})

    assert meter.usage["consumer"].rcu_by_table == {TABLE: 1.5}


def test_an_index_entry_is_charged_only_where_the_table_has_that_index(dynamodb):
    # Given the table above (no index) and one with a sparse sender index
    dynamodb.create_table(
        TableName="indexed",
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
        AttributeDefinitions=[
            {"AttributeName": "pk", "AttributeType": "S"},
            {"AttributeName": "sender_hash", "AttributeType": "S"},
        ],
        GlobalSecondaryIndexes=[
            {
                "IndexName": "by_sender",
                "KeySchema": [{"AttributeName": "sender_hash", "KeyType": "HASH"}],
                "Projection": {"ProjectionType": "KEYS_ONLY"},
            }
        ],
        BillingMode="PAY_PER_REQUEST",
    )
    meter = _meter()
    meter.attach(dynamodb, lambda *_: "door")

    # When each gets an item carrying a sender hash
    for table in (TABLE, "indexed"):
        dynamodb.put_item(TableName=table, Item={"pk": {"S": "row#1"}, "sender_hash": {"S": "a" * 32}})

    # Then only the indexed table's write costs an index entry
    usage = meter.usage["door"]
    assert usage.wcu_by_table == {TABLE: 1, "indexed": 2}
    assert usage.index_wcu == 1
