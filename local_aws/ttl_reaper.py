"""DynamoDB's time to live, emulated: moto records a table's TTL setting but never deletes.

The stack names a TTL attribute on every table that holds personal data; CloudFormation turns it
on at creation, which moto's CloudFormation skips, so `enable_from_template` sets it as the
template says. `TtlReaper.reap` then deletes what has expired, as DynamoDB's TTL process does:
- only items whose TTL attribute is a Number of epoch seconds in the past (a String, a missing
  attribute or a value more than five years old is left alone, as AWS documents);
- each delete is checked against the item as it is then, under the emulator's lock, so an item
  rewritten with a later expiry since the sweep looked is kept;
- deletes go through the table itself, so the emulated indexes drop the item too.

AWS deletes within days of expiry; here a sweep runs every few seconds, which keeps the
emulator's memory bounded by the retention window instead of by the run's length. A sweep reads
only what has expired since the last (expiry_index.py keeps each TTL table's items by expiry as
they are written), so its cost is that of the deletes, whatever the tables hold; `examined`
counts the index's entries it took.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from local_aws import expiry_index

FIVE_YEARS_SECONDS = 5 * 365 * 24 * 3600
"""DynamoDB ignores TTL values further in the past than this."""


@dataclass(frozen=True)
class Swept:
    tables: int
    examined: int
    deleted: int
    seconds: float


def ttl_attributes(template: Mapping[str, Any], physical: Mapping[str, str]) -> dict[str, str]:
    """Table name → TTL attribute, for every table the template gives an enabled TTL."""
    found: dict[str, str] = {}
    for logical_id, resource in template.get("Resources", {}).items():
        if resource.get("Type") != "AWS::DynamoDB::Table":
            continue
        spec = resource.get("Properties", {}).get("TimeToLiveSpecification") or {}
        if spec.get("Enabled") and spec.get("AttributeName") and logical_id in physical:
            found[physical[logical_id]] = str(spec["AttributeName"])
    return found


def enable_from_template(template: Mapping[str, Any], physical: Mapping[str, str], dynamodb: Any) -> dict[str, str]:
    """Turn TTL on as the template asks (what CloudFormation does at creation)."""
    attributes = ttl_attributes(template, physical)
    for table, attribute in attributes.items():
        dynamodb.update_time_to_live(
            TableName=table, TimeToLiveSpecification={"Enabled": True, "AttributeName": attribute}
        )
    return attributes


def expired(value: Any, now: float) -> bool:
    """Whether a TTL attribute value (moto's DynamoType) makes its item due for deletion."""
    at = expiry_index.expiry_of(value)
    return at is not None and now - FIVE_YEARS_SECONDS <= at < Decimal(str(now))


class TtlReaper:
    def __init__(self, account: str, region: str) -> None:
        self._account = account
        self._region = region

    def _tables(self) -> Iterable[Any]:
        from moto.dynamodb.models import dynamodb_backends

        backend = dynamodb_backends[self._account][self._region]
        for table in list(backend.tables.values()):
            if table.ttl.get("TimeToLiveStatus") == "ENABLED" and table.ttl.get("AttributeName"):
                yield table

    def reap(self, now: float | None = None) -> Swept:
        from local_aws.moto_patches import dynamodb_lock

        started = time.monotonic()
        moment = time.time() if now is None else now
        limit = Decimal(str(moment))
        tables = examined = deleted = 0
        for table in self._tables():
            tables += 1
            attribute = table.ttl["AttributeName"]
            with dynamodb_lock():
                popped = list(expiry_index.due(table, limit))
            for at, hash_key, range_key in popped:
                examined += 1
                if at < limit - FIVE_YEARS_SECONDS:
                    continue  # TTL ignores it; it only gets older, so it leaves the heap for good
                with dynamodb_lock():
                    current = table.get_item(hash_key, range_key)
                    if current is None:
                        continue
                    gone = self._delete_if_still_expired(table, current, attribute, moment)
                    deleted += gone
                    if not gone:  # given a later expiry since it was noted, or by a racing writer
                        expiry_index.noted(table, table.get_item(hash_key, range_key))
        return Swept(tables, examined, deleted, time.monotonic() - started)

    @staticmethod
    def _delete_if_still_expired(table: Any, item: Any, attribute: str, now: float) -> int:
        hash_key = item.hash_key
        range_key = item.range_key
        current = table.get_item(hash_key, range_key)
        if current is None or not expired(current.attrs.get(attribute), now):
            return 0
        table.delete_item(hash_key, range_key)
        return 1
