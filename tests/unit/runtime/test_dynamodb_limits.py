"""The emulated DynamoDB holds items, transactions and batch writes to DynamoDB's limits
(local_aws/moto_limits.py), measured as DynamoDB measures them (local_aws/aws_limits.py),
refuses in DynamoDB's words, and writes nothing of what it refuses."""

from __future__ import annotations

import re

import boto3
import pytest
from botocore.exceptions import ClientError

from local_aws.aws_limits import dynamodb_item_bytes
from tests.support.aws import REGION

ITEM_LIMIT = 409_600
TOO_BIG = "Item size has exceeded the maximum allowed size"
TOO_BIG_TO_UPDATE = "Item size to update has exceeded the maximum allowed size"


def _table(client, name: str) -> None:
    client.create_table(
        TableName=name,
        BillingMode="PAY_PER_REQUEST",
        AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
    )


@pytest.fixture
def dynamodb(aws):
    client = boto3.client("dynamodb", region_name=REGION)
    _table(client, "t")
    return client


def _item(pk: str, size: int) -> dict:
    """An item of exactly `size` bytes as DynamoDB counts them: names and values."""
    return {"pk": {"S": pk}, "v": {"S": "x" * (size - len("pk") - len(pk) - len("v"))}}


def _keys(client, table: str = "t") -> list[str]:
    pages = client.get_paginator("scan").paginate(TableName=table, ProjectionExpression="pk")
    return sorted(item["pk"]["S"] for page in pages for item in page["Items"])


def _error(raised) -> tuple[str, str]:
    error = raised.value.response["Error"]
    return error["Code"], error["Message"]


def test_an_item_is_measured_as_dynamodb_documents_it():
    assert dynamodb_item_bytes({"name": {"S": "é"}}) == 4 + 2
    # a number: one byte per two significant digits, leading and trailing zeros trimmed, plus one
    assert dynamodb_item_bytes({"n": {"N": "00120.500"}}) == 1 + 3
    assert dynamodb_item_bytes({"b": {"B": b"\x00\x01\x02"}, "t": {"BOOL": True}, "z": {"NULL": True}}) == 4 + 2 + 2
    # a list or a map: 3 bytes, and one more for each member
    assert dynamodb_item_bytes({"l": {"L": [{"S": "ab"}, {"N": "7"}]}}) == 1 + 3 + (1 + 2) + (1 + 2)
    assert dynamodb_item_bytes({"m": {"M": {"k": {"SS": ["a", "bc"]}}}}) == 1 + 3 + (1 + 1 + 3)


def test_an_item_over_400_kb_is_refused_and_not_written(dynamodb):
    # When an item of 409,601 bytes is put
    with pytest.raises(ClientError) as refused:
        dynamodb.put_item(TableName="t", Item=_item("big", ITEM_LIMIT + 1))
    # Then DynamoDB's refusal, and no item
    assert _error(refused) == ("ValidationException", TOO_BIG)
    assert _keys(dynamodb) == []


def test_an_item_of_exactly_400_kb_is_written(dynamodb):
    dynamodb.put_item(TableName="t", Item=_item("at-limit", ITEM_LIMIT))
    assert _keys(dynamodb) == ["at-limit"]


def test_an_update_growing_an_item_past_400_kb_is_refused_and_leaves_it_as_it_was(dynamodb):
    # Given an item whose map holds 300 KB
    before = {"pk": {"S": "doc"}, "m": {"M": {"a": {"S": "a" * 300_000}}}}
    dynamodb.put_item(TableName="t", Item=before)
    # When one update sets a small attribute and grows the map by another 300 KB
    with pytest.raises(ClientError) as refused:
        dynamodb.update_item(
            TableName="t",
            Key={"pk": {"S": "doc"}},
            UpdateExpression="SET w = :small, m.b = :big",
            ExpressionAttributeValues={":small": {"S": "w"}, ":big": {"S": "b" * 300_000}},
        )
    # Then DynamoDB's refusal, and the item has neither change
    assert _error(refused) == ("ValidationException", TOO_BIG_TO_UPDATE)
    assert dynamodb.get_item(TableName="t", Key={"pk": {"S": "doc"}}, ConsistentRead=True)["Item"] == before


def test_an_update_past_400_kb_in_a_transaction_cancels_it_and_writes_nothing(dynamodb):
    dynamodb.put_item(TableName="t", Item=_item("doc", 300_000))
    # When a transaction puts a new item and grows an existing one past the limit
    with pytest.raises(ClientError) as cancelled:
        dynamodb.transact_write_items(
            TransactItems=[
                {"Put": {"TableName": "t", "Item": _item("new", 100)}},
                {
                    "Update": {
                        "TableName": "t",
                        "Key": {"pk": {"S": "doc"}},
                        "UpdateExpression": "SET w = :big",
                        "ExpressionAttributeValues": {":big": {"S": "b" * 200_000}},
                    }
                },
            ]
        )
    # Then DynamoDB cancels it with the update's validation error as its reason, and writes nothing
    assert cancelled.value.response["Error"]["Code"] == "TransactionCanceledException"
    assert cancelled.value.response["CancellationReasons"] == [
        {"Code": "None"},
        {"Code": "ValidationError", "Message": TOO_BIG_TO_UPDATE},
    ]
    assert _keys(dynamodb) == ["doc"]
    item = dynamodb.get_item(TableName="t", Key={"pk": {"S": "doc"}}, ConsistentRead=True)["Item"]
    assert item == _item("doc", 300_000)


def test_a_transaction_of_100_gets_is_answered(dynamodb):
    for n in range(100):
        dynamodb.put_item(TableName="t", Item=_item(f"k{n}", 20))
    response = dynamodb.transact_get_items(
        TransactItems=[{"Get": {"TableName": "t", "Key": {"pk": {"S": f"k{n}"}}}} for n in range(100)]
    )
    assert [r["Item"]["pk"]["S"] for r in response["Responses"]] == [f"k{n}" for n in range(100)]


def _over_100(kind: str) -> re.Pattern[str]:
    return re.compile(
        r"1 validation error detected: Value '\[(com\.amazonaws\.dynamodb\.v20120810\."
        + kind
        + r"@[0-9a-f]+(, )?){101}\]' at 'transactItems' failed to satisfy constraint: "
        r"Member must have length less than or equal to 100"
    )


def test_a_transaction_of_101_writes_is_refused_in_dynamodb_s_words_and_writes_nothing(dynamodb):
    with pytest.raises(ClientError) as refused:
        dynamodb.transact_write_items(
            TransactItems=[{"Put": {"TableName": "t", "Item": _item(f"k{n}", 20)}} for n in range(101)]
        )
    code, message = _error(refused)
    assert code == "ValidationException"
    assert _over_100("TransactWriteItem").fullmatch(message)
    assert _keys(dynamodb) == []


def test_a_transaction_of_101_gets_is_refused_in_dynamodb_s_words(dynamodb):
    with pytest.raises(ClientError) as refused:
        dynamodb.transact_get_items(
            TransactItems=[{"Get": {"TableName": "t", "Key": {"pk": {"S": f"k{n}"}}}} for n in range(101)]
        )
    code, message = _error(refused)
    assert code == "ValidationException"
    assert _over_100("TransactGetItem").fullmatch(message)


def _payload_too_large(size: int) -> str:
    return (
        "Transaction payload size cannot exceed 4MB. Payload Size: : "
        f"Transaction payload size cannot exceed 4MB. Payload Size: {size}"
    )


def test_a_transaction_writing_over_4_mb_is_refused_and_writes_nothing(dynamodb):
    # Given eleven items of 390,000 bytes: 4,290,000 bytes in all, over 4 MB (4,194,304)
    items = [_item(f"big{n}", 390_000) for n in range(11)]
    with pytest.raises(ClientError) as refused:
        dynamodb.transact_write_items(TransactItems=[{"Put": {"TableName": "t", "Item": i}} for i in items])
    assert _error(refused) == ("ValidationException", _payload_too_large(4_290_000))
    assert _keys(dynamodb) == []


def test_a_transaction_reading_over_4_mb_is_refused(dynamodb):
    for n in range(11):
        dynamodb.put_item(TableName="t", Item=_item(f"big{n}", 390_000))
    with pytest.raises(ClientError) as refused:
        dynamodb.transact_get_items(
            TransactItems=[{"Get": {"TableName": "t", "Key": {"pk": {"S": f"big{n}"}}}} for n in range(11)]
        )
    assert _error(refused) == ("ValidationException", _payload_too_large(4_290_000))


def test_a_batch_write_of_26_requests_for_a_table_is_refused_and_writes_nothing(dynamodb):
    with pytest.raises(ClientError) as refused:
        dynamodb.batch_write_item(RequestItems={"t": [{"PutRequest": {"Item": _item(f"k{n}", 20)}} for n in range(26)]})
    code, message = _error(refused)
    assert code == "ValidationException"
    assert re.fullmatch(
        r"1 validation error detected: Value '\{t=\[(com\.amazonaws\.dynamodb\.v20120810\.WriteRequest@[0-9a-f]+(, )?)"
        r"{26}\]\}' at 'requestItems' failed to satisfy constraint: Map value must satisfy constraint: "
        r"\[Member must have length less than or equal to 25, Member must have length greater than or equal to 1\]",
        message,
    )
    assert _keys(dynamodb) == []


def test_a_batch_write_of_26_requests_across_tables_is_refused_and_writes_nothing(dynamodb):
    _table(dynamodb, "u")
    requests = {table: [{"PutRequest": {"Item": _item(f"{table}{n}", 20)}} for n in range(13)] for table in "tu"}
    with pytest.raises(ClientError) as refused:
        dynamodb.batch_write_item(RequestItems=requests)
    assert _error(refused) == ("ValidationException", "Too many items requested for the BatchWriteItem call")
    assert _keys(dynamodb, "t") == _keys(dynamodb, "u") == []


def test_a_batch_write_with_an_item_over_400_kb_writes_none_of_its_requests(dynamodb):
    requests = [
        {"PutRequest": {"Item": _item(pk, size)}} for pk, size in (("a", 20), ("big", ITEM_LIMIT + 1), ("c", 20))
    ]
    with pytest.raises(ClientError) as refused:
        dynamodb.batch_write_item(RequestItems={"t": requests})
    assert _error(refused) == ("ValidationException", TOO_BIG)
    assert _keys(dynamodb) == []
