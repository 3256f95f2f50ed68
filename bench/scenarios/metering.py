"""Counting AWS requests and DynamoDB capacity units by who made them, with botocore event hooks.

Each metered client reports every request it makes (`provide-client-params`) under a group the
caller decides at call time (for the local runtime: the function whose invocation runs on the
calling thread). DynamoDB write units are charged as on-demand DynamoDB prices them, the rules of
bench/consumer_costs.py: the item is read before and after each write by an unmetered probe
client; a standard write costs 1 WCU per started KB of the larger image, a transactional write
twice that per item, a failed condition is still charged, and an entry added to or removed from a
sparse index (the pending index, the sender index) costs one more. Reads: 1 RCU per started 4 KB
per item, half when eventually consistent.

Storage is measured the same way, from the images: each write adds what the item after it will
occupy until its own TTL (`expires_at`, or `expiration` for Powertools' idempotency records), less
what it occupied before, in KiB-days by table. DynamoDB bills an item's bytes plus 100 bytes of
overhead, and a sparse index's entry as its keys plus the same overhead. An item without a TTL is
kept until someone deletes it; those are counted apart (`forever_kib`), never priced as kept.
"""

from __future__ import annotations

import contextlib
import math
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from bench.consumer_costs import item_size, read_units, write_targets

WRITES = frozenset({"PutItem", "UpdateItem", "DeleteItem", "TransactWriteItems", "BatchWriteItem"})
READS = frozenset({"GetItem", "BatchGetItem", "Query", "Scan"})
SPARSE_INDEX_ATTRIBUTES = ("pending_shard", "sender_hash")
"""The key attribute of each sparse index (keys only):
an item enters or leaves it with it, in the tables that have that index (read from the table's
description)."""
TTL_ATTRIBUTES = ("expires_at", "expiration")
"""This pipeline's TTL attribute, and the one Powertools' idempotency records carry."""
ITEM_OVERHEAD_BYTES = 100
"""What DynamoDB adds to every item (and every index entry) when it bills storage."""
DAY = 86_400.0


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
    wcu_by_table: Counter[str] = field(default_factory=Counter)
    """Write units (index entries included) by table: a table's class sets their price."""
    rcu_by_table: Counter[str] = field(default_factory=Counter)
    kib_days_by_table: Counter[str] = field(default_factory=Counter)
    """Storage the writes left behind, items and index entries, each until its own TTL."""
    kib_days_by_item: Counter[str] = field(default_factory=Counter)
    forever_kib: Counter[str] = field(default_factory=Counter)
    """KiB written to items without a TTL, by item kind: kept until deleted, so not priced."""
    kept_days_by_item: dict[str, float] = field(default_factory=dict)
    """The longest an item of each kind was written to be kept (its TTL less the time written)."""

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
        self._indexes: dict[str, tuple[str, ...]] = {}
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
                context[f"{tag}_table"] = params.get("TableName")
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
                consistent = bool(context.get(f"{tag}_consistent"))
                by_table = _read_units_by_table(context.get(f"{tag}_table"), parsed, consistent)
                with self._lock:
                    usage.rcu += sum(by_table.values())
                    usage.rcu_by_table.update(by_table)
                return
            failed = "Error" in parsed
            now = time.time()
            for table, key, transactional, before_image in context.get(f"{tag}_writes", []):
                after_image = before_image if failed else self._read(table, key)
                self._charge(
                    usage,
                    f"{model.name} {item_kind(key)}",
                    table,
                    key,
                    transactional,
                    before_image,
                    after_image,
                    failed,
                    now,
                )

        events.register("provide-client-params.*.*", before)
        events.register("after-call.*.*", after)

    def _charge(
        self,
        usage: Usage,
        kind: str,
        table: str,
        key: Mapping[str, Any],
        transactional: bool,
        before: Mapping[str, Any] | None,
        after: Mapping[str, Any] | None,
        failed: bool,
        now: float,
    ) -> None:
        """One item's part of a write: its units, its index entries and the storage it changed."""
        units = _kb(max(item_size(before), item_size(after))) * (2 if transactional else 1)
        indexed = self._sparse_indexes(table)
        entries = sum(bool(before and name in before) != bool(after and name in after) for name in indexed)
        kept = _kib_days(after, key, now, indexed) - _kib_days(before, key, now, indexed)
        forever = _forever_kib(after) - _forever_kib(before)
        with self._lock:
            usage.wcu += units
            usage.wcu_by_item[kind] += units
            usage.wcu_by_table[table] += units
            if entries and not failed:
                usage.index_wcu += entries
                usage.wcu_by_item[f"{kind} (index entry)"] += entries
                usage.wcu_by_table[table] += entries
            usage.kib_days_by_table[table] += kept
            usage.kib_days_by_item[item_kind(key)] += kept
            if forever:
                usage.forever_kib[item_kind(key)] += forever
            expires = _ttl(after)
            if expires is not None and not failed:
                kind_of_item = item_kind(key)
                days = max(0.0, expires - now) / DAY
                usage.kept_days_by_item[kind_of_item] = max(usage.kept_days_by_item.get(kind_of_item, 0.0), days)

    def _key_names(self, table: str) -> tuple[str, ...]:
        if table not in self._keys:
            self._describe(table)
        return self._keys[table]

    def _sparse_indexes(self, table: str) -> tuple[str, ...]:
        """The sparse-index attributes this table has an index on: an item carrying one of the
        others costs no index write."""
        if table not in self._indexes:
            self._describe(table)
        return self._indexes[table]

    def _describe(self, table: str) -> None:
        with self._unmetered():
            described = self._probe.describe_table(TableName=table)["Table"]
        self._keys[table] = tuple(k["AttributeName"] for k in described["KeySchema"])
        hashed = {
            k["AttributeName"]
            for index in described.get("GlobalSecondaryIndexes", [])
            for k in index["KeySchema"]
            if k["KeyType"] == "HASH"
        }
        self._indexes[table] = tuple(name for name in SPARSE_INDEX_ATTRIBUTES if name in hashed)

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


def _read_units_by_table(table: str | None, parsed: Mapping[str, Any], consistent: bool) -> Counter[str]:
    """A single-table read's units under its table; a BatchGetItem's under each table it read."""
    found: Counter[str] = Counter()
    responses = parsed.get("Responses")
    if isinstance(responses, Mapping):
        for name, items in responses.items():
            found[name] += read_units({"Items": items}, consistent)
    elif table is not None:
        found[table] += read_units(parsed, consistent)
    return found


def _ttl(image: Mapping[str, Any] | None) -> float | None:
    if not image:
        return None
    for name in TTL_ATTRIBUTES:
        value = image.get(name)
        if isinstance(value, Mapping) and "N" in value:
            return float(value["N"])
    return None


def _stored_bytes(image: Mapping[str, Any], key: Mapping[str, Any], indexed: tuple[str, ...]) -> int:
    """The item, plus an entry per sparse index it is in (its keys, the index key, overhead)."""
    stored = item_size(image) + ITEM_OVERHEAD_BYTES
    for name in indexed:
        if name in image:
            stored += item_size({**key, name: image[name]}) + ITEM_OVERHEAD_BYTES
    return stored


def _kib_days(image: Mapping[str, Any] | None, key: Mapping[str, Any], now: float, indexed: tuple[str, ...]) -> float:
    expires = _ttl(image)
    if not image or expires is None:
        return 0.0
    return _stored_bytes(image, key, indexed) / 1024 * max(0.0, expires - now) / DAY


def _forever_kib(image: Mapping[str, Any] | None) -> float:
    if not image or _ttl(image) is not None:
        return 0.0
    return (item_size(image) + ITEM_OVERHEAD_BYTES) / 1024


def item_kind(key: Mapping[str, Any]) -> str:
    """What an item is, from its key: the partition key's prefix (`msg`, `lease`, ...), the sort
    key's for an item in a person's partition (`person#<hash>`, `msg#...`), or `row` for the
    webhook-log and jobs rows, which are keyed by an opaque id."""
    if "pk" in key:
        value = str(next(iter(key["pk"].values())))
        if value.startswith("person#") and "sk" in key:
            value = str(next(iter(key["sk"].values())))
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
