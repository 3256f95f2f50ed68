"""The pipeline's tables by their logical names (`TableNames`), and the consumer's reads by key
across them: the obligations behind a batch, the payloads that travel by reference, and the
single reads tasks make (`ItemReader`).

One consistent BatchGetItem answers "is this already done?" for every record of a batch, whatever
table its obligation lives in (webhook log, jobs, or the state table's done-markers). The same
read brings back a webhook row's body, so a delivery travelling by reference costs no second read
unless its body was split into parts (see domain/webhook/body.py).
"""

from __future__ import annotations

import gzip
import json
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from pipeline import schema
from pipeline.adapters import items
from pipeline.adapters.row_envelopes import plain
from pipeline.adapters.webhook_log import WebhookLog
from pipeline.domain.consumer.ports import Location, location_id
from pipeline.domain.effects import KEY_ATTRIBUTES, Table
from pipeline.domain.envelope import Envelope
from pipeline.domain.errors import AwsThrottled, PermanentError
from pipeline.domain.webhook import body as webhook_body
from pipeline.schema.jobs import PAYLOAD
from pipeline.schema.webhook_log import BODY, BODY_ENCODING, BODY_PARTS

BATCH_GET_LIMIT = 100
UNPROCESSED_ROUNDS = 5
_GZIP_MAGIC = b"\x1f\x8b"


class TableNames:
    """Logical table → deployed name."""

    def __init__(self, names: Mapping[Table, str]) -> None:
        self._names = dict(names)
        self._tables = {name: table for table, name in self._names.items()}

    def __getitem__(self, table: Table) -> str:
        return self._names[table]

    def logical(self, name: str) -> Table:
        return self._tables[name]


class ObligationReader:
    def __init__(self, dynamodb: Any, tables: TableNames, *, sleep: Callable[[float], None] = time.sleep) -> None:
        self._dynamodb = dynamodb
        self._tables = tables
        self._sleep = sleep

    # Obligations

    def lookup(self, locations: Sequence[Location]) -> dict[str, Mapping[str, Any] | None]:
        wanted: dict[str, Location] = {location_id(t, k): (t, k) for t, k in locations}
        found: dict[str, Mapping[str, Any] | None] = dict.fromkeys(wanted)
        ids = list(wanted)
        for start in range(0, len(ids), BATCH_GET_LIMIT):
            self._batch_get([wanted[i] for i in ids[start : start + BATCH_GET_LIMIT]], found)
        return found

    def _batch_get(self, locations: list[Location], found: dict[str, Mapping[str, Any] | None]) -> None:
        request: dict[str, Any] = {}
        for table, key in locations:
            entry = request.setdefault(self._tables[table], {"Keys": [], "ConsistentRead": True})
            entry["Keys"].append(items.to_item(key))
        for attempt in range(UNPROCESSED_ROUNDS):
            response = self._dynamodb.batch_get_item(RequestItems=request)
            for name, raws in response.get("Responses", {}).items():
                table = self._tables.logical(name)
                for raw in raws:
                    item = items.from_item(raw) or {}
                    key = {attr: item[attr] for attr in KEY_ATTRIBUTES[table]}
                    found[location_id(table, key)] = item
            request = response.get("UnprocessedKeys") or {}
            if not request:
                return
            self._sleep(min(1.0, 0.05 * 2**attempt))  # unprocessed keys mean throttling
        # Deferred by the consumer like a refused call: every record of the batch would otherwise
        # spend an attempt on DynamoDB's throttling, and a minute of it would dead-letter them.
        raise AwsThrottled("obligation lookup throttled: keys left unprocessed")

    # Payloads

    def payload(self, envelope: Envelope, found: Mapping[str, Any] | None) -> Any:
        if envelope.ref is None:
            return envelope.payload
        row = found if envelope.ref == envelope.id else self._row(envelope)
        if row is None:
            raise PermanentError("ref_missing", f"{envelope.source} row {envelope.ref} does not exist")
        try:
            if envelope.source == "webhook":
                return json.loads(self._webhook_body(envelope.ref, row))
            return _job_payload(row)
        except (ValueError, KeyError, OSError) as exc:  # gzip raises OSError (BadGzipFile)
            raise PermanentError("payload_unreadable", f"row {envelope.ref}: {exc}") from exc

    def _row(self, envelope: Envelope) -> dict[str, Any] | None:
        table = Table.WEBHOOK_LOG if envelope.source == "webhook" else Table.JOBS
        response = self._dynamodb.get_item(
            TableName=self._tables[table], Key=items.to_item({schema.ID: envelope.ref}), ConsistentRead=True
        )
        return items.from_item(response.get("Item"))

    def _webhook_body(self, log_id: str, row: Mapping[str, Any]) -> bytes:
        if int(row.get(BODY_PARTS, 1)) > 1:
            # read_body, not load_body: DynamoDB's own errors reach the consumer, which defers
            # throttling rather than spend an attempt on it.
            return WebhookLog(self._dynamodb, self._tables[Table.WEBHOOK_LOG]).read_body(log_id)
        encoding = row.get(BODY_ENCODING)
        return webhook_body.unpack(None if encoding is None else str(encoding), [bytes(row[BODY])])


def _job_payload(row: Mapping[str, Any]) -> Any:
    value = row[PAYLOAD]
    if isinstance(value, bytes | bytearray):
        raw = bytes(value)
        return json.loads(gzip.decompress(raw) if raw.startswith(_GZIP_MAGIC) else raw)
    return plain(value)


class ItemReader:
    """Single consistent reads for tasks (ctx.read)."""

    def __init__(self, dynamodb: Any, tables: TableNames) -> None:
        self._dynamodb = dynamodb
        self._tables = tables

    def read(self, table: Table, key: Mapping[str, Any]) -> dict[str, Any] | None:
        response = self._dynamodb.get_item(TableName=self._tables[table], Key=items.to_item(key), ConsistentRead=True)
        return items.from_item(response.get("Item"))
