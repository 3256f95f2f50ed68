"""The webhook log: one row per distinct delivery body, written before anything is enqueued.

Row layout (table key `id` = `wh-<sha256 of the raw body>`):
- `status` "queued" (or "unparseable"), `received_at` (epoch s); `replays` once the sweeper has
  replayed it (none is none, as the sweeper reads it). A row enters the sparse age index
  (`pending_shard`, `pending_since`) only when its send failed (`mark_unsent`): a row whose message
  reached its lane is the queue's to deliver, and most rows are never written again (their task's
  writes are their done-mark; see domain/consumer/marks.py). That keeps a delivery at one write, with no
  index entry to add and later remove.
- `lane`, `tenant`, `kind` for parseable bodies; `unparseable_reason` otherwise.
- the raw bytes: `body` (Binary, part 0); `body_encoding` (domain/webhook_body.ENCODINGS) unless it
  is the usual one, and `body_parts` (the count) only when there is more than one. Parts 1.. are
  items `<id>#part<n>` holding `body` and `part_of`. `load_body` puts them back together;
  consumers should read bodies through it. Usual values are left unsaid (here and for `replays`),
  and the raw length is not kept, because every byte of a row is paid for: with them a 2 KB
  WhatsApp text's row was about 1,040 bytes, two write units for most deliveries; without them,
  about 970 and one.
- `expires_at` (schema.TTL) on the row and on each part: the raw-delivery retention, counted from
  receipt. A redelivery of the same bytes finds the row and leaves its expiry as it was.
- `sender_hash` (schema.SENDER_HASH) when the delivery names exactly one person, and
  `sender_hashes` (schema.SENDER_HASHES, a Binary Set of 16-byte hashes) when it names several:
  what an erasure's scan of the log looks for (no index holds them: that would be a write unit per
  delivery). They are on the row from the door's one write, so a delivery is found whether or not
  its task ever ran (a dead letter redriven after the erasure finds its row erased). A delivery
  naming more than senders.MAX_NAMED_ON_ROW carries none; its task records it in each person's
  partition instead (tasks/privacy.py).

The write is one conditional PutItem (a TransactWriteItems when the body needs parts) that returns
the existing row when the body was seen before, so a redelivery costs no extra read.
"""

from __future__ import annotations

import time
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from pipeline import schema
from pipeline.adapters import items
from pipeline.domain.errors import AwsThrottled
from pipeline.domain.webhook import body as webhook_body
from pipeline.domain.webhook.delivery import LogEntry, Recorded, WebhookLogUnavailable
from pipeline.schema.rows import KIND, LANE, STATUS, TENANT
from pipeline.schema.webhook_log import BODY, BODY_ENCODING, BODY_PARTS, PART_OF, RECEIVED_AT, UNPARSEABLE_REASON

UNPROCESSED_RETRIES = 5

_NEW_ROW_ONLY = {
    "ConditionExpression": "attribute_not_exists(#id)",
    "ExpressionAttributeNames": {"#id": schema.ID},
    "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
}


def _row(entry: LogEntry) -> dict[str, Any]:
    row: dict[str, Any] = {
        schema.ID: entry.id,
        RECEIVED_AT: items.Milliseconds(entry.received_at),
        BODY: entry.body.parts[0],
        schema.TTL: entry.expires_at,
    }
    if entry.body.encoding != webhook_body.UNNAMED_ENCODING:
        row[BODY_ENCODING] = entry.body.encoding
    if len(entry.body.parts) > 1:
        row[BODY_PARTS] = len(entry.body.parts)
    if entry.sender_hash is not None:
        row[schema.SENDER_HASH] = entry.sender_hash
    if entry.named:
        row[schema.SENDER_HASHES] = {bytes.fromhex(hashed) for hashed in entry.named}
    if entry.route is None:
        row[STATUS] = schema.RowStatus.UNPARSEABLE
        row[UNPARSEABLE_REASON] = entry.unparseable_reason or "unknown"
    else:
        row[STATUS] = schema.RowStatus.QUEUED
        row[LANE] = entry.route.lane
        row[TENANT] = entry.route.tenant
        row[KIND] = entry.route.kind
    return items.to_item(row)


def _existing(item: dict[str, Any] | None) -> Recorded:
    if not item:
        return Recorded(created=False)
    received = items.read(item, RECEIVED_AT)
    return Recorded(
        created=False,
        existing_status=items.read(item, STATUS),
        existing_received_at=None if received is None else float(received),
    )


class WebhookLog:
    def __init__(self, dynamodb: Any, table: str) -> None:
        self._dynamodb = dynamodb
        self._table = table

    def record(self, entry: LogEntry) -> Recorded:
        """Create the row unless this body was logged before. Raises WebhookLogUnavailable when
        DynamoDB did not take the write (the caller answers 5xx so the sender retries)."""
        try:
            if len(entry.body.parts) == 1:
                self._dynamodb.put_item(TableName=self._table, Item=_row(entry), **_NEW_ROW_ONLY)
            else:
                self._dynamodb.transact_write_items(TransactItems=self._with_parts(entry))
        except ClientError as exc:
            code = exc.response.get("Error", {}).get("Code")
            if code == "ConditionalCheckFailedException":
                return _existing(exc.response.get("Item"))
            if code == "TransactionCanceledException":
                reasons = exc.response.get("CancellationReasons") or []
                if reasons and reasons[0].get("Code") == "ConditionalCheckFailed":
                    return _existing(reasons[0].get("Item"))
            raise WebhookLogUnavailable(f"webhook log write failed: {exc}") from exc
        except BotoCoreError as exc:
            raise WebhookLogUnavailable(f"webhook log write failed: {exc}") from exc
        return Recorded(created=True)

    def mark_unsent(self, log_id: str, since: float) -> None:
        """Put a queued row in the pending index, where the sweeper finds it: its message did not
        reach the lane. Raises WebhookLogUnavailable when DynamoDB did not take it."""
        try:
            self._dynamodb.update_item(
                TableName=self._table,
                Key=items.key(schema.ID, log_id),
                UpdateExpression="SET #shard = :shard, #since = if_not_exists(#since, :since), #failed = :since",
                ConditionExpression="#status = :queued",
                ExpressionAttributeNames={
                    "#shard": schema.PENDING_SHARD,
                    "#since": schema.PENDING_SINCE,
                    "#status": STATUS,
                    "#failed": schema.SEND_FAILED_AT,
                },
                ExpressionAttributeValues=items.to_item(
                    {
                        ":shard": schema.pending_shard(log_id),
                        ":since": items.Milliseconds(since),
                        ":queued": schema.RowStatus.QUEUED,
                    }
                ),
            )
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") == "ConditionalCheckFailedException":
                return  # finished, or given up on, meanwhile: nothing left to find
            raise WebhookLogUnavailable(f"webhook log row not marked unsent: {exc}") from exc
        except BotoCoreError as exc:
            raise WebhookLogUnavailable(f"webhook log row not marked unsent: {exc}") from exc

    def _with_parts(self, entry: LogEntry) -> list[dict[str, Any]]:
        # Parts carry no condition: they are only ever written with their row, and a retry
        # writes identical bytes.
        puts: list[dict[str, Any]] = [{"Put": {"TableName": self._table, "Item": _row(entry), **_NEW_ROW_ONLY}}]
        for index, part in enumerate(entry.body.parts[1:], start=1):
            part_item = items.to_item(
                {
                    schema.ID: webhook_body.part_id(entry.id, index),
                    PART_OF: entry.id,
                    BODY: part,
                    schema.TTL: entry.expires_at,
                }
            )
            puts.append({"Put": {"TableName": self._table, "Item": part_item}})
        return puts

    def load_body(self, log_id: str) -> bytes:
        """The raw delivery bytes of a logged row, whatever its size. Raises KeyError for an
        unknown id, WebhookLogUnavailable when DynamoDB cannot be read."""
        try:
            return self.read_body(log_id)
        except (ClientError, BotoCoreError, AwsThrottled) as exc:
            raise WebhookLogUnavailable(f"webhook log read failed: {exc}") from exc

    def read_body(self, log_id: str) -> bytes:
        """`load_body` for the consumer: DynamoDB's errors as DynamoDB raised them, and
        AwsThrottled when parts stayed unprocessed, so throttling is told from other failures."""
        key = items.key(schema.ID, log_id)
        row = self._dynamodb.get_item(TableName=self._table, Key=key, ConsistentRead=True).get("Item")
        if row is None:
            raise KeyError(log_id)
        count = int(items.read(row, BODY_PARTS, 1))
        parts = [items.read(row, BODY), *self._parts(log_id, count)]
        return webhook_body.unpack(items.read(row, BODY_ENCODING), parts)

    def _parts(self, log_id: str, count: int) -> list[bytes]:
        if count <= 1:
            return []
        wanted = {webhook_body.part_id(log_id, i): i for i in range(1, count)}
        found: dict[str, bytes] = {}
        request: dict[str, Any] = {
            self._table: {"Keys": [items.key(schema.ID, key) for key in wanted], "ConsistentRead": True}
        }
        for attempt in range(UNPROCESSED_RETRIES):
            response = self._dynamodb.batch_get_item(RequestItems=request)
            for item in response.get("Responses", {}).get(self._table, []):
                found[items.read(item, schema.ID)] = items.read(item, BODY)
            request = response.get("UnprocessedKeys") or {}
            if not request:
                break
            time.sleep(0.05 * 2**attempt)  # unprocessed keys mean throttling: back off, briefly
        if request:
            raise AwsThrottled(f"webhook log row {log_id}: body parts left unprocessed")
        missing = sorted(set(wanted) - set(found))
        if missing:
            raise WebhookLogUnavailable(f"webhook log row {log_id} lacks body parts {missing}")
        return [found[key] for key in sorted(wanted, key=wanted.__getitem__)]
