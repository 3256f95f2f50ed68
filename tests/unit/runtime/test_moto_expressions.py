"""Parsing an expression once per text (local_aws/moto_expressions.py) changes nothing a write
answers or stores: the same writes, each expression used again with other values and on other
items, give moto's own answers, errors and items, whether the text was seen before or not."""

from __future__ import annotations

import copy
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError
from moto.dynamodb import comparisons
from moto.dynamodb.parsing import expressions, validators

from local_aws import moto_patches
from tests.support.aws import REGION

TABLE = "expressions"

SET_AND_ADD = (
    "ADD #calls :one SET #ttl = if_not_exists(#ttl, :ttl), #tags = list_append(if_not_exists(#tags, :none), :tag)"
)
UNDER_LIMIT = "attribute_not_exists(#calls) OR #calls < :below"
NAMES = {"#calls": "calls", "#ttl": "ttl", "#tags": "tags"}


def _values(n: int, below: int | None = 3) -> dict[str, Any]:
    values = {":one": {"N": "1"}, ":ttl": {"N": str(1000 + n)}, ":none": {"L": []}, ":tag": {"L": [{"S": f"t{n}"}]}}
    if below is not None:
        values[":below"] = {"N": str(below)}
    return values


def _writes() -> list[tuple[str, dict[str, Any]]]:
    """Updates and transactions whose expressions repeat with other values, keys and outcomes."""
    calls: list[tuple[str, dict[str, Any]]] = []
    for n in range(5):  # the fourth and fifth on key a fail their condition (calls reaches 3)
        calls.append((
            "update_item",
            {"Key": {"pk": {"S": "a"}}, "UpdateExpression": SET_AND_ADD, "ConditionExpression": UNDER_LIMIT,
             "ExpressionAttributeNames": NAMES, "ExpressionAttributeValues": _values(n), "ReturnValues": "ALL_NEW"},
        ))  # fmt: skip
    for key in ("b", "c"):  # a new item each time: moto validates the tree twice
        calls.append((
            "update_item",
            {"Key": {"pk": {"S": key}}, "UpdateExpression": SET_AND_ADD, "ExpressionAttributeNames": NAMES,
             "ExpressionAttributeValues": _values(ord(key), below=None), "ReturnValues": "UPDATED_OLD"},
        ))  # fmt: skip
    calls.append((
        "update_item",
        {"Key": {"pk": {"S": "b"}}, "UpdateExpression": "REMOVE #tags SET #ttl = :ttl + :one",
         "ExpressionAttributeNames": {"#tags": "tags", "#ttl": "ttl"},
         "ExpressionAttributeValues": {":ttl": {"N": "7"}, ":one": {"N": "1"}}, "ReturnValues": "ALL_NEW"},
    ))  # fmt: skip
    for below in (1, 9):  # a transaction whose update fails, then one whose update lands
        calls.append((
            "transact_write_items",
            {"TransactItems": [
                {"Update": {"TableName": TABLE, "Key": {"pk": {"S": "c"}}, "UpdateExpression": SET_AND_ADD,
                            "ConditionExpression": UNDER_LIMIT, "ExpressionAttributeNames": NAMES,
                            "ExpressionAttributeValues": _values(below, below)}},
                {"Put": {"TableName": TABLE, "Item": {"pk": {"S": f"put{below}"}},
                         "ConditionExpression": "attribute_not_exists(pk)"}},
            ]},
        ))  # fmt: skip
    # A refused text, twice (a refusal is not kept); moto itself fails on a malformed condition, so none here
    for _ in range(2):
        calls.append(("update_item", {"Key": {"pk": {"S": "a"}}, "UpdateExpression": "SET #calls = = :one",
                                      "ExpressionAttributeNames": {"#calls": "calls"},
                                      "ExpressionAttributeValues": {":one": {"N": "1"}}}))  # fmt: skip
    # The same text whose names or values are missing in this call
    calls.append(("update_item", {"Key": {"pk": {"S": "a"}}, "UpdateExpression": SET_AND_ADD,
                                  "ExpressionAttributeNames": NAMES,
                                  "ExpressionAttributeValues": {":one": {"N": "1"}}}))  # fmt: skip
    return calls


def _run(client) -> list[Any]:
    client.create_table(
        TableName=TABLE,
        BillingMode="PAY_PER_REQUEST",
        AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
    )
    answers: list[Any] = []
    for operation, given in _writes():
        kwargs = {"TableName": TABLE, **given} if operation == "update_item" else given
        try:
            answer = getattr(client, operation)(**kwargs)
            answer.pop("ResponseMetadata")
            answers.append(answer)
        except ClientError as error:
            answers.append((error.response["Error"]["Code"], error.response["Error"]["Message"]))
    answers.append(sorted(client.scan(TableName=TABLE)["Items"], key=lambda item: item["pk"]["S"]))
    client.delete_table(TableName=TABLE)
    return answers


@pytest.fixture
def client(aws):
    moto_patches.install()
    return boto3.client("dynamodb", region_name=REGION)


def test_every_answer_and_item_is_motos_own(client, monkeypatch):
    ours = _run(client)
    again = _run(client)  # every text now kept
    monkeypatch.setattr(expressions.UpdateExpressionParser, "make",
                        classmethod(expressions.UpdateExpressionParser.make.__wrapped__))  # fmt: skip
    monkeypatch.setattr(validators, "deepcopy", copy.deepcopy)
    monkeypatch.setattr(
        comparisons.ConditionExpressionParser,
        "_lex_condition_expression",
        comparisons.ConditionExpressionParser._lex_condition_expression.__wrapped__,
    )
    theirs = _run(client)
    assert ours == theirs
    assert again == theirs
    # The writes did what the test says they do: conditions failed and passed, errors were refused
    codes = [answer[0] for answer in theirs if isinstance(answer, tuple)]
    assert codes.count("ConditionalCheckFailedException") == 2
    assert codes.count("TransactionCanceledException") == 1
    assert codes.count("ValidationException") == 3
    items = {item["pk"]["S"]: item for item in theirs[-1]}
    assert items["a"]["calls"] == {"N": "3"}
    assert [t["S"] for t in items["a"]["tags"]["L"]] == ["t0", "t1", "t2"]
    assert (items["b"]["ttl"], items["b"]["calls"]) == ({"N": "8"}, {"N": "1"})
    assert "tags" not in items["b"]
    assert items["c"]["calls"] == {"N": "2"}
    assert ("put9" in items, "put1" in items) == (True, False)


def test_a_tree_is_the_callers_own():
    # A kept text hands every caller a fresh tree: validating one (which rewrites it) leaves the next as parsed
    moto_patches.install()
    make = expressions.UpdateExpressionParser.make
    first, second = make(SET_AND_ADD), make(SET_AND_ADD)
    assert first is not second
    assert first.children[0] is not second.children[0]
