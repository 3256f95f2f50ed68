"""The emulator's tables drop a partition with its last item (local_aws/moto_partitions.py): a
runtime that keeps data for a minute holds no trace of the people whose items expired."""

from __future__ import annotations

import boto3
import pytest
from moto.core import DEFAULT_ACCOUNT_ID
from moto.dynamodb.models import dynamodb_backends

from local_aws import moto_patches
from tests.support.aws import REGION


@pytest.fixture
def client(aws):
    moto_patches.install()
    dynamodb = boto3.client("dynamodb", region_name=REGION)
    dynamodb.create_table(
        TableName="data",
        BillingMode="PAY_PER_REQUEST",
        AttributeDefinitions=[
            {"AttributeName": "pk", "AttributeType": "S"},
            {"AttributeName": "sk", "AttributeType": "S"},
        ],
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "sk", "KeyType": "RANGE"}],
    )
    return dynamodb


def _partitions() -> int:
    return len(dynamodb_backends[DEFAULT_ACCOUNT_ID][REGION].tables["data"].items)


def _key(person: str, sk: str) -> dict:
    return {"pk": {"S": f"person#{person}"}, "sk": {"S": sk}}


def test_a_partition_goes_with_its_last_item_and_a_missed_read_leaves_none(client):
    # Given two people's items, one of them with two
    client.put_item(TableName="data", Item=_key("a", "msg#1"))
    client.put_item(TableName="data", Item=_key("a", "msg#2"))
    client.put_item(TableName="data", Item=_key("b", "msg#1"))
    # When one of a's items and b's only one are deleted (as TTL deletes them)
    client.delete_item(TableName="data", Key=_key("a", "msg#1"))
    client.delete_item(TableName="data", Key=_key("b", "msg#1"))
    # Then a keeps its partition and the other item, and b's partition is gone
    assert _partitions() == 1
    assert "Item" in client.get_item(TableName="data", Key=_key("a", "msg#2"))
    # And reading or transacting on people never written adds no partition
    assert "Item" not in client.get_item(TableName="data", Key=_key("c", "msg#1"), ConsistentRead=True)
    client.transact_write_items(
        TransactItems=[{"ConditionCheck": {"TableName": "data", "Key": _key("a", "msg#2"),
                                           "ConditionExpression": "attribute_exists(pk)"}}]
    )  # fmt: skip
    assert (
        client.query(
            TableName="data", KeyConditionExpression="pk = :p", ExpressionAttributeValues={":p": {"S": "person#d"}}
        )["Items"]
        == []
    )
    assert _partitions() == 1
    # And a new item in a deleted partition is stored as before
    client.put_item(TableName="data", Item=_key("b", "msg#3"))
    assert _partitions() == 2
