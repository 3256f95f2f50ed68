"""Metering AWS requests and DynamoDB capacity units through botocore event hooks.

Every request a metered client makes is counted. For DynamoDB writes, the item is read before and
after the call by a separate, unmetered client, and write units are charged as DynamoDB prices
them on-demand:
- a standard write: 1 WCU per started KB of the larger of the item before and after;
- a transactional write: twice that, for every item in the transaction;
- a write whose condition fails: still charged (1 WCU per started KB of the existing item);
- a global secondary index: 1 WCU per index entry added or removed (the pending-by-age index is
  KEYS_ONLY, so an entry is well under 1 KB). Index writes are charged as standard writes.
Reads: 1 RCU per started 4 KB of each item returned, half that when eventually consistent.
Item sizes follow DynamoDB's rules (attribute name bytes plus value bytes; numbers about one byte
per two digits; maps and lists three bytes plus one per element).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

WRITES = frozenset({"PutItem", "UpdateItem", "DeleteItem", "TransactWriteItems", "BatchWriteItem"})
READS = frozenset({"GetItem", "BatchGetItem", "Query"})


def value_size(value: Mapping[str, Any]) -> int:
    kind, raw = next(iter(value.items()))
    if kind == "S":
        return len(raw.encode())
    if kind == "N":
        digits = str(raw).lstrip("-").replace(".", "").lstrip("0") or "0"
        return math.ceil(len(digits) / 2) + 1
    if kind == "B":
        return len(raw)
    if kind in ("BOOL", "NULL"):
        return 1
    if kind == "M":
        return 3 + sum(len(k.encode()) + value_size(v) + 1 for k, v in raw.items())
    if kind == "L":
        return 3 + sum(value_size(v) + 1 for v in raw)
    if kind in ("SS", "NS", "BS"):
        return sum(len(str(v)) for v in raw)
    return 0


def item_size(item: Mapping[str, Any] | None) -> int:
    if not item:
        return 0
    return sum(len(name.encode()) + value_size(value) for name, value in item.items())


def _kb(size: int) -> int:
    return max(1, math.ceil(size / 1024))


def write_targets(
    operation: str, params: Mapping[str, Any], key_of: Callable[[str, Mapping[str, Any]], dict[str, Any]]
) -> list[tuple[str, dict[str, Any], bool]]:
    """(table, key, transactional) of every item a write request touches; `key_of(table, item)`
    picks an item's key attributes."""
    if operation == "PutItem":
        return [(params["TableName"], key_of(params["TableName"], params["Item"]), False)]
    if operation in ("UpdateItem", "DeleteItem"):
        return [(params["TableName"], dict(params["Key"]), False)]
    if operation == "TransactWriteItems":
        found = []
        for entry in params["TransactItems"]:
            ((kind, body),) = entry.items()
            # A ConditionCheck is billed like a transactional write of the item it checks.
            key = key_of(body["TableName"], body["Item"]) if kind == "Put" else dict(body["Key"])
            found.append((body["TableName"], key, True))
        return found
    if operation == "BatchWriteItem":
        found = []
        for table, entries in params["RequestItems"].items():
            for entry in entries:
                if "PutRequest" in entry:
                    found.append((table, key_of(table, entry["PutRequest"]["Item"]), False))
                else:
                    found.append((table, dict(entry["DeleteRequest"]["Key"]), False))
        return found
    return []


def read_units(parsed: Mapping[str, Any], consistent: bool) -> float:
    """Read units of a read response: 1 per started 4 KB of each item, half when eventually consistent."""
    found: list[Mapping[str, Any]] = []
    if "Item" in parsed:
        found.append(parsed["Item"])
    found.extend(parsed.get("Items", []))
    for items in parsed.get("Responses", {}).values():
        found.extend(items)
    per_item = 1.0 if consistent else 0.5
    return sum(math.ceil(max(1, item_size(item)) / 4096) * per_item for item in found)


@dataclass
class Tables:
    """Key attributes and the attribute that puts an item in a sparse index, per table."""

    keys: dict[str, tuple[str, ...]]
    indexed_by: dict[str, str] = field(default_factory=dict)


@dataclass
class Meter:
    probe: Any
    """An unmetered DynamoDB client, used to read items before and after each write."""
    tables: Tables
    category: Callable[[str, Mapping[str, Any]], str]
    """(table, key) → what the write is for, e.g. "effect" or "tenant quota"."""
    requests: Counter[tuple[str, str]] = field(default_factory=Counter)
    wcu: Counter[str] = field(default_factory=Counter)
    rcu: float = 0.0

    def attach(self, events: Any) -> None:
        events.register("provide-client-params.*.*", self._before)
        events.register("after-call.dynamodb.*", self._after)

    def _key(self, table: str, item: Mapping[str, Any]) -> dict[str, Any]:
        return {name: item[name] for name in self.tables.keys[table]}

    def _targets(self, operation: str, params: Mapping[str, Any]) -> list[tuple[str, dict[str, Any], bool]]:
        return write_targets(operation, params, self._key)

    def _read(self, table: str, key: Mapping[str, Any]) -> dict[str, Any] | None:
        return self.probe.get_item(TableName=table, Key=key, ConsistentRead=True).get("Item")

    def _before(self, params: Mapping[str, Any], model: Any, context: dict[str, Any], **_: Any) -> None:
        service = model.service_model.service_name
        self.requests[(service, model.name)] += 1
        if service == "dynamodb" and model.name in WRITES:
            targets = self._targets(model.name, params)
            context["metered"] = [(t, k, tx, self._read(t, k)) for t, k, tx in targets]
        elif service == "dynamodb" and model.name in READS:
            tables = params.get("RequestItems", {}).values()
            context["consistent"] = bool(params.get("ConsistentRead")) or any(t.get("ConsistentRead") for t in tables)

    def _after(self, parsed: Mapping[str, Any], model: Any, context: dict[str, Any], **_: Any) -> None:
        if model.name in READS:
            self._reads(parsed, context.get("consistent", False))
            return
        failed = "Error" in parsed
        for table, key, transactional, before in context.get("metered", []):
            after = before if failed else self._read(table, key)
            units = _kb(max(item_size(before), item_size(after)))
            self.wcu[self.category(table, key)] += units * (2 if transactional else 1)
            indexed = self.tables.indexed_by.get(table)
            if indexed and not failed and bool(before and indexed in before) != bool(after and indexed in after):
                self.wcu["GSI"] += 1

    def _reads(self, parsed: Mapping[str, Any], consistent: bool) -> None:
        self.rcu += read_units(parsed, consistent)

    def write_requests(self) -> int:
        return sum(n for (service, op), n in self.requests.items() if service == "dynamodb" and op in WRITES)

    def read_requests(self) -> int:
        return sum(n for (service, op), n in self.requests.items() if service == "dynamodb" and op in READS)

    def sqs_requests(self) -> int:
        return sum(n for (service, _), n in self.requests.items() if service == "sqs")
