"""DynamoDB's time to live in the emulator (local_aws/ttl_reaper.py): the template's TTL is
turned on, expired items are deleted, everything else is kept, and a table's index forgets what
was deleted."""

from __future__ import annotations

import boto3
import pytest
from moto.core import DEFAULT_ACCOUNT_ID

from local_aws import moto_patches
from local_aws.ttl_reaper import FIVE_YEARS_SECONDS, TtlReaper, enable_from_template, ttl_attributes
from tests.support.aws import REGION

NOW = 1_800_000_000.0

TEMPLATE = {
    "Resources": {
        "Log": {
            "Type": "AWS::DynamoDB::Table",
            "Properties": {"TimeToLiveSpecification": {"AttributeName": "expires_at", "Enabled": True}},
        },
        "Off": {
            "Type": "AWS::DynamoDB::Table",
            "Properties": {"TimeToLiveSpecification": {"AttributeName": "expires_at", "Enabled": False}},
        },
        "Queue": {"Type": "AWS::SQS::Queue", "Properties": {}},
    }
}


@pytest.fixture
def client(aws):
    moto_patches.install()
    dynamodb = boto3.client("dynamodb", region_name=REGION)
    for name in ("log", "off"):
        dynamodb.create_table(
            TableName=name,
            BillingMode="PAY_PER_REQUEST",
            AttributeDefinitions=[
                {"AttributeName": "pk", "AttributeType": "S"},
                {"AttributeName": "sender", "AttributeType": "S"},
            ],
            KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
            GlobalSecondaryIndexes=[
                {
                    "IndexName": "by_sender",
                    "KeySchema": [{"AttributeName": "sender", "KeyType": "HASH"}],
                    "Projection": {"ProjectionType": "KEYS_ONLY"},
                }
            ],
        )
    return dynamodb


def _put(client, table: str, pk: str, expires_at: dict | None) -> None:
    item = {"pk": {"S": pk}, "sender": {"S": "s1"}}
    if expires_at is not None:
        item["expires_at"] = expires_at
    client.put_item(TableName=table, Item=item)


def _keys(client, table: str) -> set[str]:
    return {i["pk"]["S"] for i in client.scan(TableName=table, ConsistentRead=True)["Items"]}


def test_the_templates_enabled_ttl_is_turned_on_and_a_disabled_one_is_not(client):
    # Given a template with one table's TTL enabled and one's disabled
    physical = {"Log": "log", "Off": "off", "Queue": "q"}
    # When the runtime applies it as CloudFormation would
    enabled = enable_from_template(TEMPLATE, physical, client)
    # Then only the enabled table has TTL on, on the named attribute
    assert enabled == {"log": "expires_at"} == ttl_attributes(TEMPLATE, physical)
    described = client.describe_time_to_live(TableName="log")["TimeToLiveDescription"]
    assert described == {"TimeToLiveStatus": "ENABLED", "AttributeName": "expires_at"}
    assert client.describe_time_to_live(TableName="off")["TimeToLiveDescription"]["TimeToLiveStatus"] == "DISABLED"


def test_expired_items_are_deleted_and_everything_else_is_kept(client):
    # Given a TTL table with items past, at and before their expiry, and items TTL must ignore
    enable_from_template(TEMPLATE, {"Log": "log", "Off": "off"}, client)
    _put(client, "log", "past", {"N": str(int(NOW) - 1)})
    _put(client, "log", "fraction-past", {"N": f"{NOW - 0.5}"})
    _put(client, "log", "now", {"N": str(int(NOW))})
    _put(client, "log", "future", {"N": str(int(NOW) + 60)})
    _put(client, "log", "no-attribute", None)
    _put(client, "log", "a-string", {"S": str(int(NOW) - 100)})
    _put(client, "log", "ancient", {"N": str(int(NOW) - FIVE_YEARS_SECONDS - 10)})
    _put(client, "off", "past-but-ttl-off", {"N": str(int(NOW) - 100)})
    # When the reaper sweeps
    swept = TtlReaper(DEFAULT_ACCOUNT_ID, REGION).reap(now=NOW)
    # Then only the expired Numbers within five years are gone, and only from the TTL table
    assert _keys(client, "log") == {"now", "future", "no-attribute", "a-string", "ancient"}
    assert _keys(client, "off") == {"past-but-ttl-off"}
    assert (swept.tables, swept.examined, swept.deleted) == (1, 7, 2)


def test_a_deleted_item_leaves_the_tables_index(client):
    # Given an expired item that an index holds
    enable_from_template(TEMPLATE, {"Log": "log"}, client)
    _put(client, "log", "gone", {"N": str(int(NOW) - 1)})
    _put(client, "log", "stays", {"N": str(int(NOW) + 1)})
    # When the reaper sweeps
    TtlReaper(DEFAULT_ACCOUNT_ID, REGION).reap(now=NOW)
    # Then a query on the index finds only the item kept
    found = client.query(
        TableName="log",
        IndexName="by_sender",
        KeyConditionExpression="sender = :s",
        ExpressionAttributeValues={":s": {"S": "s1"}},
    )["Items"]
    assert [i["pk"]["S"] for i in found] == ["stays"]


def test_an_item_rewritten_with_a_later_expiry_after_the_sweep_looked_is_kept(client, monkeypatch):
    # Given an expired item that a writer extends between the sweep's read and its delete
    enable_from_template(TEMPLATE, {"Log": "log"}, client)
    _put(client, "log", "extended", {"N": str(int(NOW) - 1)})
    reaper = TtlReaper(DEFAULT_ACCOUNT_ID, REGION)
    delete = TtlReaper._delete_if_still_expired

    def extend_first(table, item, attribute, now):
        _put(client, "log", "extended", {"N": str(int(NOW) + 600)})
        return delete(table, item, attribute, now)

    monkeypatch.setattr(TtlReaper, "_delete_if_still_expired", staticmethod(extend_first))
    # When the sweep deletes what it saw expired
    swept = reaper.reap(now=NOW)
    # Then the rewritten item is kept
    assert swept.deleted == 0
    assert _keys(client, "log") == {"extended"}
