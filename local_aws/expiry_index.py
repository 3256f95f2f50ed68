"""When each item of a TTL table expires, kept as the items are written, so the TTL reaper
(ttl_reaper.py) reads only what is due instead of every item of every table.

The reaper used to walk every item of the TTL tables every ten seconds, holding the emulator's
DynamoDB lock for each table's walk: a webhook's cost then grew with the tables' size, and with
data kept for days (`lanectl local` without `--retention`) without bound. Here every put and
update (and so every transactional or batched write, and a rolled-back transaction's restore,
which go through them) of an item whose TTL attribute is a Number pushes (expiry, key) onto a
heap of its table. The reaper pops what is due and checks each popped key against the item as it
is then: an item rewritten since with a later expiry is noted again at that expiry, one with
no TTL any more, or deleted, is forgotten. A write that leaves an item's expiry later than the
one it is already held under pushes nothing, so a heap holds about one entry per item with a
TTL, however often each is rewritten (the state table's counters are, on every call).

A table's heap is built from its items on first use, so items written before this module was
installed, or before its table's TTL was turned on, are found too.
"""

from __future__ import annotations

import functools
import heapq
import itertools
from collections.abc import Iterator
from decimal import Decimal, InvalidOperation
from typing import Any

_PATCHED = False
_HEAP = "_lanes_expiry_heap"
_SCHEDULED = "_lanes_expiry_scheduled"
"""Per table, each item's key -> the expiry of its entry in the heap (one entry an item)."""
_ORDER = itertools.count()
"""Ties between equal expiries: heap entries never compare moto's keys."""


def install() -> None:
    global _PATCHED
    if _PATCHED:
        return
    from moto.dynamodb.models import DynamoDBBackend
    from moto.dynamodb.models.table import Table

    original_put, original_update = Table.put_item, DynamoDBBackend.update_item

    @functools.wraps(original_put)
    def put_item(self: Any, *args: Any, **kwargs: Any) -> Any:
        item = original_put(self, *args, **kwargs)
        noted(self, item)
        return item

    @functools.wraps(original_update)
    def update_item(self: Any, table_name: str, *args: Any, **kwargs: Any) -> Any:
        item = original_update(self, table_name, *args, **kwargs)
        noted(self.get_table(table_name), item)
        return item

    Table.put_item = put_item  # type: ignore[method-assign]
    DynamoDBBackend.update_item = update_item  # type: ignore[method-assign]
    _PATCHED = True


def expiry_of(value: Any) -> Decimal | None:
    """A TTL attribute's value (moto's DynamoType) as epoch seconds; None when TTL ignores it."""
    if getattr(value, "type", None) != "N":
        return None
    try:
        return Decimal(str(value.value))
    except (InvalidOperation, ValueError):
        return None


def noted(table: Any, item: Any) -> None:
    """Remember when `item` expires, if its table has TTL on and the item a Number in it. An item
    already due no later keeps its one entry: a counter rewritten on every call with a later
    expiry would otherwise leave an entry a write."""
    heap = table.__dict__.get(_HEAP)
    if heap is None or item is None:
        return  # not built yet: the first use reads the table, this item included
    attribute = _attribute(table)
    if attribute is None:
        return
    at = expiry_of(item.attrs.get(attribute))
    if at is None:
        return
    key = (item.hash_key, item.range_key)
    scheduled = table.__dict__[_SCHEDULED]
    held = scheduled.get(key)
    if held is not None and held <= at:
        return
    scheduled[key] = at
    heapq.heappush(heap, (at, next(_ORDER), item.hash_key, item.range_key))


def due(table: Any, now: Decimal) -> Iterator[tuple[Decimal, Any, Any]]:
    """(expiry, hash key, range key) of every item whose entry expires before `now`, each taken off
    the heap as it is handed out. The item may have been given a later expiry since: the caller
    checks it and, if it is kept, notes it again (`noted`). The caller holds the emulator's
    DynamoDB lock while it iterates."""
    heap = _heap(table)
    scheduled = table.__dict__[_SCHEDULED]
    while heap and heap[0][0] < now:
        at, _, hash_key, range_key = heapq.heappop(heap)
        if scheduled.get((hash_key, range_key)) != at:
            continue  # superseded by an earlier expiry, already handed out
        del scheduled[(hash_key, range_key)]
        yield at, hash_key, range_key


def _attribute(table: Any) -> str | None:
    if table.ttl.get("TimeToLiveStatus") != "ENABLED":
        return None
    return table.ttl.get("AttributeName") or None


def _heap(table: Any) -> list[tuple[Decimal, int, Any, Any]]:
    heap = table.__dict__.get(_HEAP)
    if heap is None:
        heap = []
        table.__dict__[_SCHEDULED] = {}
        table.__dict__[_HEAP] = heap
        for item in _unsorted_items(table):
            noted(table, item)
    return heap


def _unsorted_items(table: Any) -> Iterator[Any]:
    """Every item of a moto table, in storage order (its `all_items` sorts them all first)."""
    for stored in list(table.items.values()):
        if table.range_key_attr:
            yield from list(stored.values())
        else:
            yield stored
