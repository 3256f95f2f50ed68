"""Counting AWS requests and DynamoDB capacity units by who made them, with botocore event hooks.

Each metered client reports every request it makes (`provide-client-params`) under a group the
caller decides at call time (for the local runtime: the function whose invocation runs on the
calling thread). DynamoDB write units are charged as on-demand DynamoDB prices them, the rules of
bench/consumer_costs.py: the item is read before and after each write by an unmetered probe
client; a standard write costs 1 WCU per started KB of the larger image, a transactional write
twice that per item, a failed condition is still charged, and an entry added to or removed from a
sparse index (the pending index, the sender index) costs one more. Reads: 1 RCU per started 4 KB
per item, half when eventually consistent.
"""

from __future__ import annotations

import contextlib
import math
import threading
from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from bench.consumer_costs import item_size, read_units, write_targets

WRITES = frozenset({"PutItem", "UpdateItem", "DeleteItem", "TransactWriteItems", "BatchWriteItem"})
READS = frozenset({"GetItem", "BatchGetItem", "Query", "Scan"})
SPARSE_INDEX_ATTRIBUTES = ("pending_shard", "sender_hash")
"""The key attribute of each sparse, keys-only index: an item enters or leaves it with it."""


def _kb(size: int) -> int:
    return max(1, math.ceil(size / 1024))


@dataclass
class Usage:
    requests: Counter[tuple[str, str]] = field(default_factory=Counter)
    wcu: float = 0.0
    rcu: float = 0.0
    index_wcu: float = 0.0
    wcu_by_item: Counter[str] = field(default_factory=Counter)
    """Write units (index entries included) by operation and item kind (the key's prefix)."""

    def count(self, service: str, operations: frozenset[str] | None = None) -> int:
        return sum(
            n for (s, op), n in self.requests.items() if s == service and (operations is None or op in operations)
        )


class Meter:
    def __init__(self, probe: Callable[[], Any]) -> None:
        """`probe` makes the unmetered DynamoDB client that reads items before and after writes."""
        self._make_probe = probe
        self._probe_client: Any = None
        self._probing = threading.local()
        self._keys: dict[str, tuple[str, ...]] = {}
        self._lock = threading.Lock()
        self.usage: dict[str, Usage] = {}
        self.misses = 0
        """Probe reads that failed (their writes are priced from the other image only)."""

    @contextlib.contextmanager
    def _unmetered(self) -> Iterator[None]:
        previous = getattr(self._probing, "active", False)
        self._probing.active = True
        try:
            yield
        finally:
            self._probing.active = previous

    @property
    def _probe(self) -> Any:
        if self._probe_client is None:
            with self._unmetered():
                self._probe_client = self._make_probe()
        return self._probe_client

    def group(self, name: str) -> Usage:
        with self._lock:
            return self.usage.setdefault(name, Usage())

    def attach(self, client: Any, group_of: Callable[[str, Mapping[str, Any]], str | None]) -> None:
        """Meter `client`; `group_of(service, params)` names the group at call time (None: not metered)."""
        events = client.meta.events
        # botocore hands every handler of one request the same context dict; a client metered by
        # two meters (a run nested in another's) must not read the other meter's notes.
        tag = f"meter{id(self)}"

        def before(params: Mapping[str, Any], model: Any, context: dict[str, Any], **_: Any) -> None:
            if getattr(self._probing, "active", False):
                return
            service = model.service_model.service_name
            group = group_of(service, params)
            if group is None:
                return
            usage = self.group(group)
            context[f"{tag}_group"] = group
            with self._lock:
                usage.requests[(service, model.name)] += 1
            if service == "dynamodb" and model.name in WRITES:
                context[f"{tag}_writes"] = [
                    (t, k, tx, self._read(t, k)) for t, k, tx in self._targets(model.name, params)
                ]
            elif service == "dynamodb" and model.name in READS:
                tables = params.get("RequestItems", {}).values()
                context[f"{tag}_consistent"] = bool(params.get("ConsistentRead")) or any(
                    t.get("ConsistentRead") for t in tables
                )

        def after(parsed: Mapping[str, Any], model: Any, context: dict[str, Any], **_: Any) -> None:
            group = context.get(f"{tag}_group")
            if group is None:
                return
            usage = self.group(group)
            if model.name == "ReceiveMessage" and not parsed.get("Messages"):
                # An empty poll: Lambda's pollers make these whether or not work arrives (a fixed cost).
                with self._lock:
                    usage.requests[("sqs", "ReceiveMessage")] -= 1
                    usage.requests[("sqs", "ReceiveMessage (empty)")] += 1
                return
            if model.service_model.service_name != "dynamodb":
                return
            if model.name in READS:
                units = read_units(parsed, bool(context.get(f"{tag}_consistent")))
                with self._lock:
                    usage.rcu += units
                return
            failed = "Error" in parsed
            for table, key, transactional, before_image in context.get(f"{tag}_writes", []):
                after_image = before_image if failed else self._read(table, key)
                units = _kb(max(item_size(before_image), item_size(after_image))) * (2 if transactional else 1)
                entries = sum(
                    bool(before_image and name in before_image) != bool(after_image and name in after_image)
                    for name in SPARSE_INDEX_ATTRIBUTES
                )
                kind = f"{model.name} {item_kind(key)}"
                with self._lock:
                    usage.wcu += units
                    usage.wcu_by_item[kind] += units
                    if entries and not failed:
                        usage.index_wcu += entries
                        usage.wcu_by_item[f"{kind} (index entry)"] += entries

        events.register("provide-client-params.*.*", before)
        events.register("after-call.*.*", after)

    def _key_names(self, table: str) -> tuple[str, ...]:
        if table not in self._keys:
            with self._unmetered():
                schema = self._probe.describe_table(TableName=table)["Table"]["KeySchema"]
            self._keys[table] = tuple(k["AttributeName"] for k in schema)
        return self._keys[table]

    def _key(self, table: str, item: Mapping[str, Any]) -> dict[str, Any]:
        return {name: item[name] for name in self._key_names(table)}

    def _targets(self, operation: str, params: Mapping[str, Any]) -> list[tuple[str, dict[str, Any], bool]]:
        return write_targets(operation, params, self._key)

    def _read(self, table: str, key: Mapping[str, Any]) -> dict[str, Any] | None:
        """The item as it is now. This runs inside the metered call's own hooks, so it must never
        raise into it: a read that fails counts as a missing item."""
        with self._unmetered():
            try:
                return self._probe.get_item(TableName=table, Key=key, ConsistentRead=True).get("Item")
            except Exception:
                self.misses += 1
                return None


def item_kind(key: Mapping[str, Any]) -> str:
    """What an item is, from its key: the partition key's prefix (`msg`, `lease`, ...), or `row`
    for the webhook-log and jobs rows, which are keyed by an opaque id."""
    if "pk" in key:
        value = str(next(iter(key["pk"].values())))
        return value.split("#", 1)[0] if "#" in value else "state"
    return "row"


@contextlib.contextmanager
def metering_new_clients(meter: Meter, group_of: Callable[[str, Mapping[str, Any]], str | None]) -> Iterator[None]:
    """Meter every botocore client created inside the block (the runtime's handlers create theirs
    at cold start, its pollers at start-up)."""
    import botocore.client

    original = botocore.client.BaseClient.__init__

    def init(self: Any, *args: Any, **kwargs: Any) -> None:
        original(self, *args, **kwargs)
        meter.attach(self, group_of)

    botocore.client.BaseClient.__init__ = init  # type: ignore[method-assign]
    try:
        yield
    finally:
        botocore.client.BaseClient.__init__ = original  # type: ignore[method-assign]
