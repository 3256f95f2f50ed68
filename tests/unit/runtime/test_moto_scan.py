"""The emulator's Scan (local_aws/moto_scan.py) answers every page as moto's own does: the same
items in the same order, the same counts, the same page ends (Limit, 1 MB) and start keys, with
projections and filters, on tables keyed by strings, by numbers, and by a hash key alone."""

from __future__ import annotations

import boto3
import pytest
from moto.dynamodb.models.table import Table

from local_aws import moto_patches
from tests.support.aws import REGION

TABLES = {
    "strings": (("pk", "S"), ("sk", "S")),
    "numbers": (("pk", "N"), ("sk", "N")),
    "hash-only": (("pk", "S"), None),
}


def _value(kind: str, n: int) -> dict:
    return {"N": str(n * 7 % 23 - 5)} if kind == "N" else {"S": f"k{n * 7 % 23:03d}"}


@pytest.fixture
def client(aws):
    moto_patches.install()
    dynamodb = boto3.client("dynamodb", region_name=REGION)
    for name, (hash_key, range_key) in TABLES.items():
        keys = [hash_key] + ([range_key] if range_key else [])
        dynamodb.create_table(
            TableName=name,
            BillingMode="PAY_PER_REQUEST",
            AttributeDefinitions=[{"AttributeName": a, "AttributeType": t} for a, t in keys],
            KeySchema=[{"AttributeName": a, "KeyType": k} for (a, _), k in zip(keys, ("HASH", "RANGE"), strict=False)],
        )
        for n in range(60):
            item = {hash_key[0]: _value(hash_key[1], n // 3 if range_key else n), "n": {"N": str(n)}}
            if range_key:
                item[range_key[0]] = _value(range_key[1], n)
            # every fifth item large, so that the 1 MB page ends before the item count does
            item["body"] = {"S": ("x" * 150_000) if n % 5 == 0 else f"text {n}"}
            item["tags"] = {"M": {"colour": {"S": "red" if n % 2 else "blue"}, "rank": {"N": str(n % 4)}}}
            dynamodb.put_item(TableName=name, Item=item)
    return dynamodb


def _pages(client, **kwargs) -> list[dict]:
    pages, start = [], None
    while True:
        if start is not None:
            kwargs["ExclusiveStartKey"] = start
        page = client.scan(**kwargs)
        page.pop("ResponseMetadata")
        pages.append(page)
        start = page.get("LastEvaluatedKey")
        if start is None:
            return pages


SCANS = [
    {},
    {"Limit": 7},
    {"ProjectionExpression": "pk, n, tags.colour"},
    {"FilterExpression": "tags.colour = :c", "ExpressionAttributeValues": {":c": {"S": "red"}}, "Limit": 9},
    {"FilterExpression": "n > :n", "ProjectionExpression": "#b", "ExpressionAttributeNames": {"#b": "body"},
     "ExpressionAttributeValues": {":n": {"N": "40"}}},
    {"Segment": 1, "TotalSegments": 3, "Limit": 4},
]  # fmt: skip


@pytest.mark.parametrize("table", list(TABLES))
@pytest.mark.parametrize("scan", SCANS, ids=range(len(SCANS)))
def test_every_page_is_motos_own(client, monkeypatch, table, scan):
    ours = _pages(client, TableName=table, **scan)
    monkeypatch.setattr(Table, "scan", Table.scan.__wrapped__)
    theirs = _pages(client, TableName=table, **scan)
    assert ours == theirs
    assert sum(page["ScannedCount"] for page in ours) > 0


def test_pages_end_at_a_megabyte_and_at_the_limit(client):
    # Every fifth item is 150 KB: a page holds at most six of them (about 1 MB) before it ends
    pages = _pages(client, TableName="strings")
    assert len(pages) > 1
    assert all(sum(len(i["body"]["S"]) for i in page["Items"]) <= 1_000_000 for page in pages)
    assert sum(page["Count"] for page in pages) == 60
    # And Limit counts the items read, before the filter drops some
    limited = _pages(
        client, TableName="strings", Limit=10, FilterExpression="n < :n", ExpressionAttributeValues={":n": {"N": "0"}}
    )
    assert all(page["Count"] == 0 for page in limited)
    assert [page["ScannedCount"] for page in limited][:-1] == [10] * (len(limited) - 1)


def test_an_item_changed_after_the_scan_leaves_the_answer_as_it_was_read(client):
    # A projection builds new items; without one, the answer is serialised before the call returns
    first = client.scan(TableName="hash-only", Limit=1)["Items"][0]
    client.update_item(
        TableName="hash-only",
        Key={"pk": first["pk"]},
        UpdateExpression="SET body = :b",
        ExpressionAttributeValues={":b": {"S": "changed"}},
    )
    assert first["body"]["S"] != "changed"
    assert client.scan(TableName="hash-only", Limit=1)["Items"][0]["body"]["S"] == "changed"
