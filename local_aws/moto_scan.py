"""A page of a Scan copies nothing and walks only its own items.

moto answers every page of a Scan by sorting all of the table's items (comparing its own typed
values), walking from the first of them to the page's start key, and deep-copying each item it
returns before projecting it. A paginated Scan of a table then costs pages times the table size, all
under the emulator's one DynamoDB lock (moto_patches.py) that every write waits on: reading the
data table of a soak (3,500 items of 1.4 KB, five pages) took 0.4-0.5 s, and the door's requests
that arrived meanwhile waited for it (p99 517 ms while a reader scanned, 106 ms otherwise). In
DynamoDB a Scan never holds up a write. An erasure and `lanectl trace` scan tables.

Here a table's own Scan (no index, no legacy ScanFilter: those keep moto's) sorts the table's
keys as plain values (still every page: a table changes between pages), finds the start key by
bisection, sizes each item once and copies nothing: a projection
builds new items (of top-level attributes, sharing their values), and the answer is serialised
under the lock (the handler holds it, see moto_patches.py), so no write can change an item
between the read and the answer. What it returns, in what order and where a page ends (1 MB of
items read, or Limit items evaluated) is moto's, which tests/unit/runtime/test_moto_scan.py
compares page by page. bench/scan_pages.py: a Scan of 3,500 such items 0.40 s -> 0.10 s.
"""

from __future__ import annotations

import bisect
import functools
from decimal import Decimal
from typing import Any

_PATCHED = False


def install() -> None:
    global _PATCHED
    if _PATCHED:
        return
    from moto.dynamodb.models import table as table_module
    from moto.dynamodb.models.table import Table

    original = Table.scan
    size_limit = table_module.RESULT_SIZE_LIMIT

    @functools.wraps(original)
    def scan(
        self: Any,
        filters: dict[str, Any],
        limit: int,
        exclusive_start_key: dict[str, Any],
        filter_expression: Any = None,
        index_name: str | None = None,
        consistent_read: bool = False,
        projection_expression: list[list[str]] | None = None,
        segments: Any = (None, None),
    ) -> tuple[list[Any], int, dict[str, Any] | None]:
        if index_name or filters:
            return original(
                self, filters, limit, exclusive_start_key, filter_expression, index_name,
                consistent_read, projection_expression, segments,
            )  # fmt: skip
        items = _in_key_order(self)
        start = 0
        if exclusive_start_key is not None:
            start = bisect.bisect_right([key for key, _ in items], _dict_key(self, exclusive_start_key))
        results: list[Any] = []
        result_size = scanned = 0
        last_evaluated_key = None
        for _, item in items[start:]:
            if not item.is_within_segment(segments):
                continue
            size = item.size()
            if len(results) == limit or result_size + size > size_limit:
                last_evaluated_key = self._get_last_evaluated_key(results[-1], None)
                break
            results.append(item)
            result_size += size
            scanned += 1
        if filter_expression is not None:
            results = [item for item in results if filter_expression.expr(item)]
        if projection_expression:
            results = [_projected(item, projection_expression) for item in results]
        return results, scanned, last_evaluated_key

    Table.scan = scan  # type: ignore[method-assign]
    _PATCHED = True


def _projected(item: Any, paths: list[list[str]]) -> Any:
    """moto's projection, without its round trip through plain JSON where every path is a top-level
    attribute: the new item shares the attribute values (serialised before the lock is let go)."""
    if any(len(path) != 1 or "[" in path[0] for path in paths):
        return item.project(paths)
    from moto.dynamodb.models.dynamo_type import Item

    projected = Item(item.hash_key, item.range_key, attrs={})
    for (name,) in paths:
        if name in item.attrs:
            projected.attrs[name] = item.attrs[name]
    return projected


def _plain(value: Any) -> Any:
    """A key attribute's value as DynamoDB orders it (numbers by value, strings and binaries as they are)."""
    if value is None:
        return None
    return Decimal(value.value) if value.type == "N" else value.value


def _in_key_order(table: Any) -> list[tuple[tuple[Any, Any], Any]]:
    keyed: list[tuple[tuple[Any, Any], Any]] = []
    for partition in table.items.values():
        if table.range_key_attr:
            keyed.extend(((_plain(item.hash_key), _plain(item.range_key)), item) for item in partition.values())
        else:
            keyed.append(((_plain(partition.hash_key), _NONE), partition))
    keyed.sort(key=lambda pair: pair[0])
    return keyed


def _dict_key(table: Any, key: dict[str, Any]) -> tuple[Any, Any]:
    from moto.dynamodb.models.dynamo_type import DynamoType

    hash_value = _plain(DynamoType(key[table.hash_key_attr]))
    if table.range_key_attr and table.range_key_attr in key:
        return (hash_value, _plain(DynamoType(key[table.range_key_attr])))
    return (hash_value, _NONE)


class _NoRangeKey:
    """The range key of every item of a table without one: equal to itself, so items order by hash key."""


_NONE = _NoRangeKey()
