"""Make moto's DynamoDB as atomic as DynamoDB.

DynamoDB applies each write (and each transaction) atomically with its condition. moto checks
the condition and then writes, with nothing in between to stop another thread: under real
concurrency two conditional puts can both succeed. The local runtime and the concurrency tests run
handlers in threads, so every DynamoDB write and transaction goes through one lock. Reads take it
too: moto's reads iterate the table's dictionaries and fail ("dictionary changed size during
iteration") when a write lands mid-read, a failure DynamoDB does not have and a consumer would
count as a transient error and retry.
"""

from __future__ import annotations

import functools
import threading
from typing import Any

_LOCK = threading.RLock()
_PATCHED = False
_WRITES = ("put_item", "update_item", "delete_item", "transact_write_items", "batch_write_item")
_READS = ("get_item", "batch_get_item", "query", "scan", "describe_table")


def make_dynamodb_atomic() -> None:
    global _PATCHED
    if _PATCHED:
        return
    from moto.dynamodb.models import DynamoDBBackend

    for name in _WRITES + _READS:
        original = getattr(DynamoDBBackend, name, None)
        if original is None:
            continue

        def locked(self: Any, *args: Any, __original: Any = original, **kwargs: Any) -> Any:
            with _LOCK:
                return __original(self, *args, **kwargs)

        setattr(DynamoDBBackend, name, functools.wraps(original)(locked))
    _PATCHED = True
