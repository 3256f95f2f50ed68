"""Make moto behave like the services under concurrency and volume: atomic DynamoDB writes,
transactions whose cost is their own items, and SQS queues whose calls do not walk every message.

DynamoDB applies each write (and each transaction) atomically with its condition. moto checks
the condition and then writes, with nothing in between to stop another thread: under real
concurrency two conditional puts can both succeed. The local runtime and the concurrency tests run
handlers in threads, so every DynamoDB write and transaction goes through one lock. Reads take it
too: moto's reads iterate the table's dictionaries and fail ("dictionary changed size during
iteration") when a write lands mid-read, a failure DynamoDB does not have and a consumer would
count as a transient error and retry. So do moto's request handlers, around the backend's calls:
they read the live item outside them (an UpdateItem deep-copies the item before its write and
describes it after, a GetItem describes it), and an item whose attributes another thread adds or
removes meanwhile fails the same way. The lease budgets do exactly that to one item, so a
consumer taking the llm budget saw the error now and then, failed closed and deferred its record;
and a lease taken before the error was never given back, holding a slot until it expired.

moto backs out a failed transaction by deep-copying every table it touches before it starts: a
transaction then costs as much as the tables are large (tens of milliseconds at 30,000 items,
under the lock every other call waits on). Here it keeps a copy of the transaction's own items
instead and puts those back; the lock makes the whole transaction atomic either way.

Index queries: see moto_indexes.py; a Scan's pages: moto_scan.py; parsing expressions: moto_expressions.py;
what the TTL reaper reads: expiry_index.py. SQS: see
moto_sqs.py. The cost of a call itself: see moto_dispatch.py and moto_direct.py. AWS's limits: see
moto_limits.py; a stack a service refuses: moto_stacks.py. The model (Bedrock's Converse):
moto_converse.py.
"""

from __future__ import annotations

import copy
import functools
import threading
from typing import Any

from local_aws import (
    expiry_index,
    moto_alarm_history,
    moto_converse,
    moto_direct,
    moto_dispatch,
    moto_expressions,
    moto_indexes,
    moto_limits,
    moto_partitions,
    moto_results,
    moto_scan,
    moto_sqs,
    moto_stacks,
    moto_tracking,
)
from local_aws.iam import enforcer

_LOCK = threading.RLock()
_PATCHED = False
_WRITES = ("put_item", "update_item", "delete_item", "transact_write_items", "batch_write_item")
_READS = ("get_item", "batch_get_item", "query", "scan", "describe_table")


def install() -> None:
    """Every patch, once per process (the runtime and the test session both call it)."""
    # First, so the DynamoDB lock and the index upkeep wrap its checks (an update it refuses puts
    # the item back under the same lock).
    moto_limits.install()
    moto_indexes.install()
    moto_partitions.install()
    moto_scan.install()
    moto_expressions.install()
    expiry_index.install()
    make_dynamodb_atomic()
    moto_sqs.install()
    moto_dispatch.install()
    moto_direct.install()
    moto_results.install()
    moto_tracking.install()
    moto_stacks.install()
    moto_alarm_history.install()
    moto_converse.install()
    # After moto_direct: the role check runs just before the emulator answers a call.
    enforcer.install()


def dynamodb_lock() -> Any:
    """The lock every DynamoDB read and write of the emulator holds: what works on moto's tables
    directly (the TTL reaper) holds it too."""
    return _LOCK


def make_dynamodb_atomic() -> None:
    global _PATCHED
    if _PATCHED:
        return
    from moto.dynamodb import models
    from moto.dynamodb.models import DynamoDBBackend
    from moto.dynamodb.models.table import Table

    _transactions_copy_items_not_tables(models, DynamoDBBackend, Table)
    for name in _WRITES + _READS:
        original = getattr(DynamoDBBackend, name, None)
        if original is None:
            continue

        def locked(self: Any, *args: Any, __original: Any = original, **kwargs: Any) -> Any:
            with _LOCK:
                return __original(self, *args, **kwargs)

        setattr(DynamoDBBackend, name, functools.wraps(original)(locked))
    _handlers_hold_the_lock()
    _PATCHED = True


def _handlers_hold_the_lock() -> None:
    """Every DynamoDB request, from parsing to its serialised answer, under the backend's lock: the
    in-process calls (moto_direct.py) and moto's server both answer through `call_action`."""
    from moto.dynamodb.responses import DynamoHandler

    original = DynamoHandler.call_action

    def call_action(self: Any, *args: Any, **kwargs: Any) -> Any:
        with _LOCK:
            return original(self, *args, **kwargs)

    DynamoHandler.call_action = functools.wraps(original)(call_action)  # type: ignore[method-assign]


class _CopyWithoutTables:
    """The `copy` module as moto's backend module sees it, except that a Table is not copied: the
    transaction below keeps its own items instead."""

    def __init__(self, table_class: type) -> None:
        self._table_class = table_class

    def deepcopy(self, value: Any, memo: Any = None) -> Any:
        if isinstance(value, self._table_class):
            return value
        return copy.deepcopy(value, memo)

    def __getattr__(self, name: str) -> Any:
        return getattr(copy, name)


def _transactions_copy_items_not_tables(models: Any, backend_class: Any, table_class: type) -> None:
    models.copy = _CopyWithoutTables(table_class)
    original = backend_class.transact_write_items

    def transact_write_items(self: Any, transact_items: list[dict[str, Any]]) -> None:
        before = _items_before(self, transact_items)
        try:
            original(self, transact_items)
        except Exception:
            for table_name, key, item in reversed(before):
                _put_back(self, table_name, key, item)
            raise

    backend_class.transact_write_items = functools.wraps(original)(transact_write_items)


def _items_before(backend: Any, transact_items: list[dict[str, Any]]) -> list[tuple[str, dict[str, Any], Any]]:
    """(table, key, a copy of the item or None) for every item the transaction names."""
    before = []
    for entry in transact_items:
        if len(entry) != 1:
            continue
        kind, operation = next(iter(entry.items()))
        table_name = operation.get("TableName")
        table = backend.tables.get(table_name) if table_name else None
        if table is None:
            continue
        if kind == "Put":
            attributes = operation.get("Item") or {}
            names = [table.hash_key_attr] + ([table.range_key_attr] if table.range_key_attr else [])
            if not all(name in attributes for name in names):
                continue
            key = {name: attributes[name] for name in names}
        else:
            key = operation.get("Key")
            if not key:
                continue
        try:
            current = backend.get_item(table_name, key)
        except Exception:  # noqa: S112 (an invalid key fails the transaction itself; nothing to keep)
            continue
        before.append((table_name, key, copy.deepcopy(current) if current is not None else None))
    return before


def _put_back(backend: Any, table_name: str, key: dict[str, Any], item: Any) -> None:
    if item is None:
        backend.delete_item(table_name, key)
    else:
        backend.put_item(table_name, item.to_json()["Attributes"])
