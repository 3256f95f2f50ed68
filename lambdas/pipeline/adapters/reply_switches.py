"""Turning auto-reply off and on by hand (`lanectl auto-reply`): the items tasks/reply_holds.py
reads, at the keys it makes.

- A tenant: its switch item in the state table (`auto-reply#<tenant>`), present while off: one
  PutItem to turn off, one DeleteItem to turn on.
- A conversation: its hold in the data table (the conversation's partition, `auto-reply`),
  carrying the customer's `sender_hash` so their erasure finds it: `off_at` set to turn off;
  turning on removes `off_at` and `opted_out_at` (the customer asked again, through a person), and
  leaves an echo's pause to end by itself. One UpdateItem each.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from pipeline import schema
from pipeline.adapters import items


class ReplySwitches:
    def __init__(self, client: Any, state_table: str, data_table: str, clock: Callable[[], float]) -> None:
        self._client = client
        self._state = state_table
        self._data = data_table
        self._clock = clock

    def tenant(self, key: Mapping[str, str], *, on: bool) -> None:
        """`key`: the tenant's switch (tasks/reply_holds.py tenant_switch_key)."""
        if on:
            self._client.delete_item(TableName=self._state, Key=items.to_item(key))
            return
        self._client.put_item(
            TableName=self._state, Item=items.to_item({**key, "off_at": items.Milliseconds(self._clock())})
        )

    def conversation(self, hold: Mapping[str, str], sender_hash: str, *, on: bool) -> None:
        """`hold`: the conversation's hold (tasks/reply_holds.py hold_key)."""
        key = items.to_item(hold)
        if on:
            self._client.update_item(
                TableName=self._data,
                Key=key,
                UpdateExpression="REMOVE #off, #out",
                ExpressionAttributeNames={"#off": "off_at", "#out": "opted_out_at"},
            )
            return
        self._client.update_item(
            TableName=self._data,
            Key=key,
            UpdateExpression="SET #off = :now, #sender = :sender",
            ExpressionAttributeNames={"#off": "off_at", "#sender": schema.SENDER_HASH},
            ExpressionAttributeValues=items.to_item(
                {":now": items.Milliseconds(self._clock()), ":sender": sender_hash}
            ),
        )
