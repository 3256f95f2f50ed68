"""Token budgets' counters in the state table, one item per model per slice (domain/token_rates.py).

A reservation is one UpdateItem, taken or refused, on an item of a few dozen bytes: one write unit:

    ADD tokens :n SET expires_at = :ttl  IF attribute_not_exists(tokens) OR tokens <= :room

where :room is the slice's share less the reservation, so the count never passes the share.
"""

from __future__ import annotations

from typing import Any

from pipeline.adapters.rate_windows import add_within
from pipeline.domain.token_rates import TOKENS


class TokenCounters:
    def __init__(self, dynamodb: Any, table: str) -> None:
        self._dynamodb = dynamodb
        self._table = table

    def add_tokens(self, key: str, tokens: int, at_most: int, expires_at: float) -> int | None:
        if tokens < 1 or tokens > at_most:
            raise ValueError(f"{tokens} tokens cannot fit a share of {at_most}")
        return add_within(self._dynamodb, self._table, key, TOKENS, tokens, at_most, expires_at)
