"""moto's DynamoDB with the runtime's patches (ops/runtime/moto_patches.py): a cancelled
transaction leaves every item as it was, without copying tables, and a committed one writes all."""

from __future__ import annotations

import boto3
import pytest
from botocore.exceptions import ClientError

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
