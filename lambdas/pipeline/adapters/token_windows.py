"""Token budgets' counters in the state table, one item per model per slice (domain/dependencies/token_rates.py).

A reservation is one UpdateItem, taken or refused, on an item of a few dozen bytes: one write unit:

    ADD tokens :n SET expires_at = :ttl  IF attribute_not_exists(tokens) OR tokens <= :room

where :room is the slice's share less the reservation, so the count never passes the share.
"""

from __future__ import annotations

from typing import Any

from botocore.exceptions import ClientError

from pipeline import schema
from pipeline.adapters import items
from pipeline.adapters.rate_windows import ITEM_TTL_SLACK_SECONDS
from pipeline.domain.dependencies.token_rates import TOKENS


class TokenCounters:
    def __init__(self, dynamodb: Any, table: str) -> None:
        self._dynamodb = dynamodb
        self._table = table

    def add_tokens(self, key: str, tokens: int, at_most: int, expires_at: float) -> int | None:
        if tokens < 1 or tokens > at_most:
            raise ValueError(f"{tokens} tokens cannot fit a share of {at_most}")
        try:
            answer = self._dynamodb.update_item(
                TableName=self._table,
                Key=items.to_item({schema.PK: key}),
                UpdateExpression="ADD #tokens :n SET #ttl = :ttl",
                ConditionExpression="attribute_not_exists(#tokens) OR #tokens <= :room",
                ExpressionAttributeNames={"#tokens": TOKENS, "#ttl": schema.TTL},
                ExpressionAttributeValues=items.to_item(
                    {":n": tokens, ":room": at_most - tokens, ":ttl": int(expires_at) + ITEM_TTL_SLACK_SECONDS}
                ),
                ReturnValues="UPDATED_NEW",
            )
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") == "ConditionalCheckFailedException":
                return None
            raise
        counted = items.from_item(answer.get("Attributes") or {}) or {}
        return int(counted.get(TOKENS, tokens))
