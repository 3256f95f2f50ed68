"""moto's DynamoDB with the runtime's patches (local_aws/moto_patches.py): a cancelled
transaction leaves every item as it was, without copying tables, and a committed one writes all;
a request's answer never sees a write that came after it."""

from __future__ import annotations

import threading

import boto3
import pytest
from botocore.exceptions import ClientError
from moto.core import DEFAULT_ACCOUNT_ID
from moto.dynamodb.models import dynamodb_backends

from local_aws import moto_indexes
from tests.support.aws import REGION


@pytest.fixture
def table(aws):
    client = boto3.client("dynamodb", region_name=REGION)
    client.create_table(
        TableName="t",
        BillingMode="PAY_PER_REQUEST",
        AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
    )
    client.put_item(TableName="t", Item={"pk": {"S": "kept"}, "v": {"N": "1"}})
    client.put_item(TableName="t", Item={"pk": {"S": "guard"}, "v": {"N": "1"}})
    return client


def _item(client, pk: str):
    return client.get_item(TableName="t", Key={"pk": {"S": pk}}, ConsistentRead=True).get("Item")


def test_a_cancelled_transaction_puts_back_what_its_earlier_writes_changed(table):
    with pytest.raises(ClientError) as cancelled:
        table.transact_write_items(
            TransactItems=[
                {"Put": {"TableName": "t", "Item": {"pk": {"S": "new"}, "v": {"N": "9"}}}},
                {
                    "Update": {
                        "TableName": "t",
                        "Key": {"pk": {"S": "kept"}},
                        "UpdateExpression": "SET v = :v",
                        "ExpressionAttributeValues": {":v": {"N": "2"}},
                    }
                },
                {
                    "Delete": {
                        "TableName": "t",
                        "Key": {"pk": {"S": "guard"}},
                        "ConditionExpression": "v = :two",
                        "ExpressionAttributeValues": {":two": {"N": "2"}},
                    }
                },
            ]
        )
    assert cancelled.value.response["Error"]["Code"] == "TransactionCanceledException"
    assert _item(table, "new") is None
    assert _item(table, "kept") == {"pk": {"S": "kept"}, "v": {"N": "1"}}
    assert _item(table, "guard") == {"pk": {"S": "guard"}, "v": {"N": "1"}}


def test_a_committed_transaction_writes_every_item(table):
    table.transact_write_items(
        TransactItems=[
            {"Put": {"TableName": "t", "Item": {"pk": {"S": "new"}, "v": {"N": "9"}}}},
            {"Delete": {"TableName": "t", "Key": {"pk": {"S": "guard"}}}},
        ]
    )
    assert _item(table, "new") == {"pk": {"S": "new"}, "v": {"N": "9"}}
    assert _item(table, "guard") is None
    assert _item(table, "kept") == {"pk": {"S": "kept"}, "v": {"N": "1"}}


def test_a_transaction_naming_one_item_twice_is_refused_and_changes_nothing(table):
    with pytest.raises(ClientError):
        table.transact_write_items(
            TransactItems=[
                {"Put": {"TableName": "t", "Item": {"pk": {"S": "kept"}, "v": {"N": "5"}}}},
                {"Delete": {"TableName": "t", "Key": {"pk": {"S": "kept"}}}},
            ]
        )
    assert _item(table, "kept") == {"pk": {"S": "kept"}, "v": {"N": "1"}}


def test_a_write_arriving_while_a_read_is_answered_waits_for_the_answer(table, monkeypatch):
    # Given a write to an item arriving while a GetItem of it builds its answer: moto's handler
    # reads the live item there, outside the backend's methods, and an item whose attributes
    # change under that read fails it ("dictionary changed size during iteration")
    from moto.dynamodb.models.dynamo_type import Item

    describe = Item.describe_attrs
    reader = threading.current_thread()
    writer: list[threading.Thread] = []

    def write() -> None:
        boto3.client("dynamodb", region_name=REGION).update_item(
            TableName="t",
            Key={"pk": {"S": "kept"}},
            UpdateExpression="SET late = :v",
            ExpressionAttributeValues={":v": {"N": "2"}},
        )

    def describing(self, *args, **kwargs):
        answer = describe(self, *args, **kwargs)
        if threading.current_thread() is reader and not writer:
            writer.append(threading.Thread(target=write))
            writer[0].start()
            writer[0].join(1.0)  # long enough for a write nothing holds back
        return answer

    monkeypatch.setattr(Item, "describe_attrs", describing)
    # When the read answers
    seen = _item(table, "kept")
    writer[0].join(10)
    # Then it answered with the item as it was, and the write landed after it
    assert seen == {"pk": {"S": "kept"}, "v": {"N": "1"}}
    assert _item(table, "kept") == {"pk": {"S": "kept"}, "v": {"N": "1"}, "late": {"N": "2"}}


def test_a_transaction_never_copies_a_table(table, monkeypatch):
    from moto.dynamodb.models.table import Table

    def refuse(self, memo):
        raise AssertionError("a transaction copied a whole table")

    monkeypatch.setattr(Table, "__deepcopy__", refuse, raising=False)
    with pytest.raises(ClientError):
        table.transact_write_items(
            TransactItems=[
                {"Put": {"TableName": "t", "Item": {"pk": {"S": "new"}}}},
                {
                    "ConditionCheck": {
                        "TableName": "t",
                        "Key": {"pk": {"S": "kept"}},
                        "ConditionExpression": "v = :z",
                        "ExpressionAttributeValues": {":z": {"N": "0"}},
                    }
                },
            ]
        )
    assert _item(table, "new") is None


@pytest.fixture
def indexed(aws):
    client = boto3.client("dynamodb", region_name=REGION)
    client.create_table(
        TableName="rows",
        BillingMode="PAY_PER_REQUEST",
        AttributeDefinitions=[
            {"AttributeName": "id", "AttributeType": "S"},
            {"AttributeName": "shard", "AttributeType": "S"},
            {"AttributeName": "since", "AttributeType": "N"},
        ],
        KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
        GlobalSecondaryIndexes=[
            {
                "IndexName": "pending",
                "KeySchema": [
                    {"AttributeName": "shard", "KeyType": "HASH"},
                    {"AttributeName": "since", "KeyType": "RANGE"},
                ],
                "Projection": {"ProjectionType": "KEYS_ONLY"},
            }
        ],
    )
    return client


def _pending(client) -> list[str]:
    before = moto_indexes.STATS["index_reads"]
    response = client.query(
        TableName="rows",
        IndexName="pending",
        KeyConditionExpression="#s = :s AND #t < :t",
        ExpressionAttributeNames={"#s": "shard", "#t": "since"},
        ExpressionAttributeValues={":s": {"S": "p0"}, ":t": {"N": "1000"}},
    )
    assert moto_indexes.STATS["index_reads"] == before + 1, "the query scanned the table"
    return [item["id"]["S"] for item in response["Items"]]


def test_an_index_query_sees_every_write_that_adds_or_removes_its_key(indexed):
    for n in range(5):
        indexed.put_item(
            TableName="rows", Item={"id": {"S": f"r{n}"}, "shard": {"S": "p0"}, "since": {"N": str(10 - n)}}
        )
    indexed.put_item(TableName="rows", Item={"id": {"S": "done"}})
    assert _pending(indexed) == ["r4", "r3", "r2", "r1", "r0"]
    # An update that removes the index key takes the row out; a delete too; a put back adds it
    indexed.update_item(
        TableName="rows",
        Key={"id": {"S": "r2"}},
        UpdateExpression="REMOVE #s, #t",
        ExpressionAttributeNames={"#s": "shard", "#t": "since"},
    )
    indexed.delete_item(TableName="rows", Key={"id": {"S": "r3"}})
    indexed.put_item(TableName="rows", Item={"id": {"S": "r1"}, "note": {"S": "rewritten without keys"}})
    assert _pending(indexed) == ["r4", "r0"]
    # An update that sets the key puts a row in
    indexed.update_item(
        TableName="rows",
        Key={"id": {"S": "done"}},
        UpdateExpression="SET #s = :s, #t = :t",
        ExpressionAttributeNames={"#s": "shard", "#t": "since"},
        ExpressionAttributeValues={":s": {"S": "p0"}, ":t": {"N": "1"}},
    )
    assert _pending(indexed) == ["done", "r4", "r0"]


def test_a_cancelled_transaction_leaves_the_index_as_it_was(indexed):
    indexed.put_item(TableName="rows", Item={"id": {"S": "r0"}, "shard": {"S": "p0"}, "since": {"N": "5"}})
    with pytest.raises(ClientError):
        indexed.transact_write_items(
            TransactItems=[
                {
                    "Update": {
                        "TableName": "rows",
                        "Key": {"id": {"S": "r0"}},
                        "UpdateExpression": "REMOVE #s",
                        "ExpressionAttributeNames": {"#s": "shard"},
                    }
                },
                {
                    "ConditionCheck": {
                        "TableName": "rows",
                        "Key": {"id": {"S": "missing"}},
                        "ConditionExpression": "attribute_exists(id)",
                    }
                },
            ]
        )
    assert _pending(indexed) == ["r0"]


def test_an_index_query_reads_only_the_hash_value_it_asks_for_and_follows_a_row_that_moves(indexed):
    indexed.put_item(TableName="rows", Item={"id": {"S": "a"}, "shard": {"S": "p0"}, "since": {"N": "1"}})
    indexed.put_item(TableName="rows", Item={"id": {"S": "b"}, "shard": {"S": "p1"}, "since": {"N": "2"}})
    assert _pending(indexed) == ["a"]
    indexed.update_item(
        TableName="rows",
        Key={"id": {"S": "b"}},
        UpdateExpression="SET #s = :s",
        ExpressionAttributeNames={"#s": "shard"},
        ExpressionAttributeValues={":s": {"S": "p0"}},
    )
    indexed.update_item(
        TableName="rows",
        Key={"id": {"S": "a"}},
        UpdateExpression="SET #s = :s",
        ExpressionAttributeNames={"#s": "shard"},
        ExpressionAttributeValues={":s": {"S": "p1"}},
    )
    assert _pending(indexed) == ["b"]


def test_an_index_forgets_a_hash_value_once_no_item_carries_it(indexed):
    # Given rows under two shards of the index
    indexed.put_item(TableName="rows", Item={"id": {"S": "a"}, "shard": {"S": "p0"}, "since": {"N": "1"}})
    indexed.put_item(TableName="rows", Item={"id": {"S": "b"}, "shard": {"S": "p1"}, "since": {"N": "2"}})
    # When p1's only row is deleted and p0's moves to another shard
    indexed.delete_item(TableName="rows", Key={"id": {"S": "b"}})
    indexed.update_item(
        TableName="rows",
        Key={"id": {"S": "a"}},
        UpdateExpression="SET #s = :s",
        ExpressionAttributeNames={"#s": "shard"},
        ExpressionAttributeValues={":s": {"S": "p2"}},
    )
    # Then the index holds only the value still carried, and a query of a gone one is empty
    table = dynamodb_backends[DEFAULT_ACCOUNT_ID][REGION].tables["rows"]
    assert [value[0].value for value in moto_indexes._members(table)["pending"]] == ["p2"]
    assert _pending(indexed) == []
