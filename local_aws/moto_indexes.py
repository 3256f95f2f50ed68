"""moto's global secondary indexes, kept as indexes: a query reads the index's own items.

moto answers a query on a GSI by sorting every item of the table and filtering for the index's
keys. The sweeper queries a sparse index (only rows still pending carry its key), so its cost
grew with every row ever logged: at 20,000 rows one sweep took a fifth of the runtime's CPU and,
holding the DynamoDB lock, delayed every webhook behind it. Here each table keeps, per GSI, the
items that carry that index's hash key, updated by every write (put, update, delete, and the
writes a transaction or a rollback makes through them), grouped by the value of that hash key, and
a query on the index reads only the items of the value it asks for. Queries on the table itself
and scans are unchanged.
"""

from __future__ import annotations

import functools
from typing import Any

_PATCHED = False
_INDEX_NAME_AT = 7
"""Position of `index_name` in moto's Table.query (the backend passes it positionally)."""
STATS = {"index_reads": 0}
"""Queries answered from an index's own items (the tests check the fast path is the one taken)."""


def install() -> None:
    global _PATCHED
    if _PATCHED:
        return
    from moto.dynamodb.models import DynamoDBBackend
    from moto.dynamodb.models.table import Table

    original_put, original_delete = Table.put_item, Table.delete_item
    original_query, original_all = Table.query, Table.all_items
    original_update = DynamoDBBackend.update_item

    @functools.wraps(original_put)
    def put_item(self: Any, *args: Any, **kwargs: Any) -> Any:
        item = original_put(self, *args, **kwargs)
        _refresh(self, item)
        return item

    @functools.wraps(original_delete)
    def delete_item(self: Any, hash_key: Any, range_key: Any) -> Any:
        item = original_delete(self, hash_key, range_key)
        if item is not None:
            _drop(self, item)
        return item

    @functools.wraps(original_update)
    def update_item(self: Any, table_name: str, key: dict[str, Any], *args: Any, **kwargs: Any) -> Any:
        item = original_update(self, table_name, key, *args, **kwargs)
        _refresh(self.get_table(table_name), item)
        return item

    @functools.wraps(original_query)
    def query(self: Any, *args: Any, **kwargs: Any) -> Any:
        index_name = kwargs.get("index_name", args[_INDEX_NAME_AT] if len(args) > _INDEX_NAME_AT else None)
        wanted = _wanted_hash(self, index_name, args, kwargs)
        if wanted is None:
            return original_query(self, *args, **kwargs)
        self.__dict__["_lanes_reading"] = (index_name, wanted)
        STATS["index_reads"] += 1
        try:
            return original_query(self, *args, **kwargs)
        finally:
            self.__dict__.pop("_lanes_reading", None)

    @functools.wraps(original_all)
    def all_items(self: Any) -> list[Any]:
        reading = self.__dict__.get("_lanes_reading")
        if reading is None:
            return original_all(self)
        index_name, wanted = reading
        items = list(_members(self)[index_name].get(wanted, {}).values())
        return sorted(items, key=lambda x: (x.hash_key, x.range_key) if x.range_key else x.hash_key)

    Table.put_item = put_item  # type: ignore[method-assign]
    Table.delete_item = delete_item  # type: ignore[method-assign]
    Table.query = query  # type: ignore[method-assign]
    Table.all_items = all_items  # type: ignore[method-assign]
    DynamoDBBackend.update_item = update_item  # type: ignore[method-assign]
    _PATCHED = True


def _hash_attributes(index: Any) -> list[str]:
    return [key["AttributeName"] for key in index.schema if key["KeyType"] == "HASH"]


def _wanted_hash(table: Any, index_name: str | None, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """The index hash value a query asks for, as `_members` groups them; None: let moto scan."""
    if index_name is None or index_name not in _members(table):
        return None
    (index,) = [i for i in table.global_indexes if i.name == index_name]
    names = _hash_attributes(index)
    conditions = dict(kwargs.get("hash_key_conditions") or [])
    if conditions and set(conditions) == set(names):
        return tuple(conditions[name] for name in names)
    hash_key = kwargs.get("hash_key", args[0] if args else None)
    if hash_key is not None and len(names) == 1:
        return (hash_key,)
    return None


def _members(table: Any) -> dict[str, dict[Any, dict[Any, Any]]]:
    """Per GSI name, per value of its hash key, the items that carry it (built from the table on
    first use)."""
    members = table.__dict__.get("_lanes_gsi_members")
    if members is None:
        members = {index.name: {} for index in table.global_indexes}
        table.__dict__["_lanes_gsi_members"] = members
        table.__dict__["_lanes_gsi_where"] = {index.name: {} for index in table.global_indexes}
        for item in table.__class__.all_items.__wrapped__(table):
            _refresh(table, item)
    return members


def _refresh(table: Any, item: Any) -> None:
    if item is None or not table.global_indexes:
        return
    members = _members(table)
    where = _where(table)
    key = (item.hash_key, item.range_key)
    for index in table.global_indexes:
        groups = members.setdefault(index.name, {})
        placed = where.setdefault(index.name, {})
        previous = placed.pop(key, None)
        if previous is not None:
            _leave(groups, previous, key)
        names = _hash_attributes(index)
        if all(name in item.attrs for name in names):
            value = tuple(item.attrs[name] for name in names)
            groups.setdefault(value, {})[key] = item
            placed[key] = value


def _drop(table: Any, item: Any) -> None:
    if not table.global_indexes:
        return
    key = (item.hash_key, item.range_key)
    members, where = _members(table), _where(table)
    for index_name, placed in where.items():
        previous = placed.pop(key, None)
        if previous is not None:
            _leave(members[index_name], previous, key)


def _leave(groups: dict[Any, dict[Any, Any]], value: Any, key: Any) -> None:
    """The item `key` is no longer under `value`; a value with no item left goes too (an index
    keyed by person would otherwise keep every person ever written)."""
    group = groups.get(value)
    if group is None:
        return
    group.pop(key, None)
    if not group:
        del groups[value]


def _where(table: Any) -> dict[str, dict[Any, Any]]:
    """Per GSI name, each member item's key -> the hash value it is grouped under."""
    return table.__dict__.setdefault("_lanes_gsi_where", {})
