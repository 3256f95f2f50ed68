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
    # Then only the expired Numbers within five years are gone, and only from the TTL table; the
    # sweep looked at the three Numbers already past (the ancient one among them), nothing else
    assert _keys(client, "log") == {"now", "future", "no-attribute", "a-string", "ancient"}
    assert _keys(client, "off") == {"past-but-ttl-off"}
    assert (swept.tables, swept.examined, swept.deleted) == (1, 3, 2)


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


def test_a_sweep_reads_what_has_expired_not_every_item_the_table_holds(client):
    # Given a TTL table of 2,000 items kept for a day and 3 that have expired, swept once already
    enable_from_template(TEMPLATE, {"Log": "log"}, client)
    reaper = TtlReaper(DEFAULT_ACCOUNT_ID, REGION)
    reaper.reap(now=NOW)
    for n in range(2_000):
        _put(client, "log", f"kept-{n}", {"N": str(int(NOW) + 86_400)})
    for n in range(3):
        _put(client, "log", f"gone-{n}", {"N": str(int(NOW) + 5)})
    # When the next sweep runs after those three expired
    swept = reaper.reap(now=NOW + 10)
    # Then it deleted them having looked at them alone: its cost does not grow with the table
    assert (swept.examined, swept.deleted) == (3, 3)
    assert len(_keys(client, "log")) == 2_000


def test_an_item_given_a_later_expiry_is_deleted_at_the_later_one(client):
    # Given an item written to expire soon, then rewritten to expire a minute later
    enable_from_template(TEMPLATE, {"Log": "log"}, client)
    reaper = TtlReaper(DEFAULT_ACCOUNT_ID, REGION)
    reaper.reap(now=NOW)
    _put(client, "log", "extended", {"N": str(int(NOW) + 5)})
    _put(client, "log", "extended", {"N": str(int(NOW) + 65)})
    # When sweeps run past the first expiry, then past the second
    first = reaper.reap(now=NOW + 10)
    kept = _keys(client, "log")
    second = reaper.reap(now=NOW + 70)
    # Then the first keeps it and the second deletes it
    assert (kept, first.deleted) == ({"extended"}, 0)
    assert (_keys(client, "log"), second.deleted) == (set(), 1)


def test_items_written_by_a_transaction_or_an_update_expire_too(client):
    # Given a TTL table swept once, then one item put by a transaction and one given its expiry by
    # an UpdateItem
    enable_from_template(TEMPLATE, {"Log": "log"}, client)
    reaper = TtlReaper(DEFAULT_ACCOUNT_ID, REGION)
    reaper.reap(now=NOW)
    soon = {"N": str(int(NOW) + 5)}
    client.transact_write_items(
        TransactItems=[{"Put": {"TableName": "log", "Item": {"pk": {"S": "transacted"}, "expires_at": soon}}}]
    )
    _put(client, "log", "updated", None)
    client.update_item(
        TableName="log",
        Key={"pk": {"S": "updated"}},
        UpdateExpression="SET expires_at = :at",
        ExpressionAttributeValues={":at": soon},
    )
    # When a sweep runs after they expired
    swept = reaper.reap(now=NOW + 10)
    # Then both are gone
    assert (_keys(client, "log"), swept.deleted) == (set(), 2)


def test_an_item_rewritten_a_thousand_times_is_looked_at_once_a_sweep(client):
    # Given an item rewritten 1,000 times, each time with an expiry a second later (a counter)
    enable_from_template(TEMPLATE, {"Log": "log"}, client)
    reaper = TtlReaper(DEFAULT_ACCOUNT_ID, REGION)
    reaper.reap(now=NOW)
    for n in range(1, 1_001):
        _put(client, "log", "counter", {"N": str(int(NOW) + n)})
    # When a sweep runs after its first expiry, and another after its last
    first = reaper.reap(now=NOW + 10)
    last = reaper.reap(now=NOW + 1_001)
    # Then each looked at the item once: kept by the first, deleted by the second
    assert (first.examined, first.deleted) == (1, 0)
    assert (last.examined, last.deleted) == (1, 1)
    assert _keys(client, "log") == set()
