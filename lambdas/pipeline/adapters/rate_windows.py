"""Rate budgets' counters in the state table, one item per key per slice (domain/dependencies/rates.py).

Counting a call is one UpdateItem on an item of a few dozen bytes, so one write unit whether it
is counted or refused; it answers the count, so the instance that fills a slice stops asking:

    ADD calls :one SET expires_at = :ttl  IF attribute_not_exists(calls) OR calls < :below

A slice's item is useless once the slice ends; the table's TTL deletes it a while later. Holding a
key (`fill`, after the dependency said the key is over its rate) sets each held slice's count to
the key's limit, one UpdateItem a slice.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from pipeline import schema
from pipeline.adapters import items
from pipeline.domain.dependencies.rates import CALLS

ITEM_TTL_SLACK_SECONDS = 300


class SliceCounters:
    def __init__(self, dynamodb: Any, table: str) -> None:
        self._dynamodb = dynamodb
        self._table = table

    def add_one(self, key: str, below: int, expires_at: float) -> int | None:
        try:
            answer = self._dynamodb.update_item(
                TableName=self._table,
                Key=items.to_item({schema.PK: key}),
                UpdateExpression="ADD #calls :one SET #ttl = :ttl",
                ConditionExpression="attribute_not_exists(#calls) OR #calls < :below",
                ExpressionAttributeNames={"#calls": CALLS, "#ttl": schema.TTL},
                ExpressionAttributeValues=items.to_item(
                    {":one": 1, ":below": below, ":ttl": int(expires_at) + ITEM_TTL_SLACK_SECONDS}
                ),
                # The count comes back at no extra cost: the taker that fills a slice knows it.
                ReturnValues="UPDATED_NEW",
            )
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") == "ConditionalCheckFailedException":
                return None
            raise
        counted = items.from_item(answer.get("Attributes") or {}) or {}
        return int(counted.get(CALLS, below))

    def fill(self, keys: Sequence[str], calls: int, expires_at: float) -> None:
        ttl = int(expires_at) + ITEM_TTL_SLACK_SECONDS
        for key in keys:
            try:
                # UpdateItem, the counters' own action: the function may make no other write here.
                self._dynamodb.update_item(
                    TableName=self._table,
                    Key=items.to_item({schema.PK: key}),
                    UpdateExpression="SET #calls = :calls, #ttl = :ttl",
                    ExpressionAttributeNames={"#calls": CALLS, "#ttl": schema.TTL},
                    ExpressionAttributeValues=items.to_item({":calls": calls, ":ttl": ttl}),
                )
            except (ClientError, BotoCoreError):
                return  # best effort: a slice left open only lets through calls Meta may refuse again
