"""One person's rows and items, found and erased (tasks/erase.py).

Webhook rows are found by a scan of the webhook log, filtered on the row's `sender_hash` (a
delivery naming one person) or `sender_hashes` (several), for every hash the erasure takes at once,
and read page by page: the log keeps raw deliveries only a week, so it is small, and erasures are rare, while
an index entry on every row would cost a write unit on every delivery (see README, "Personal
data", for the sums). The scan is consistent, so a row written before it started is seen. Jobs
and data items are found by a query of each table's keys-only index, and of the person's own
partition of the data table (domain/senders.py); those never read a body. A row is emptied
by one conditional put of its tombstone (domain/erasure/requests.py): a webhook row on condition it still
exists (nothing here brings back a row TTL deleted), a job row on condition its status is the one
read, committed with its tenant's queued count when it was still queued (as any job leaving
`queued` does). A webhook row's body parts go first, so that an erasure stopped half way leaves a
row that can still be found and erased, never parts that nothing points at. Items are deleted in
batches of 25.

What is found also names the person's other ids (`Erasable.linked`, tasks/messages.py): an item
found through the index by one hash but living in another's partition, or an item of the person's
partition carrying another's hash, links the two.

Index reads are eventually consistent: an item written a moment before may not be in them yet,
which is why the task asks again until they are empty.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from pipeline import schema
from pipeline.adapters import items
from pipeline.adapters.tables import TableNames
from pipeline.domain import retention, senders
from pipeline.domain.consumer.work import Erasable, RowsPage
from pipeline.domain.effects import KEY_ATTRIBUTES, OnConflict, Put, Table, Update, Write
from pipeline.domain.erasure import requests as erasure
from pipeline.domain.errors import AwsThrottled, TransientError
from pipeline.domain.jobs.bookkeeping import queued_decrement
from pipeline.domain.ports import CommitState, Committer
from pipeline.domain.webhook import body as webhook_body
from pipeline.schema.rows import STATUS
from pipeline.schema.webhook_log import BODY_PARTS
from pipeline.settings import RetentionSettings

BATCH_WRITE_LIMIT = 25
UNPROCESSED_RETRIES = 5
JOB_ATTEMPTS = 3
"""A job row's status may change between its read and its tombstone (a consumer finishing it):
read and try again, this many times."""


def _linked(sender_hash: str, indexed: list[dict[str, Any]], partition: list[dict[str, Any]]) -> tuple[str, ...]:
    prefix = len(senders.PERSON_PREFIX)
    found = {str(item[schema.PK])[prefix:] for item in indexed if senders.in_person_partition(item)}
    found |= {str(item.get(schema.SENDER_HASH, "")) for item in partition}
    return tuple(sorted(value for value in found - {sender_hash} if senders.is_hash(value)))


class ErasureIncomplete(TransientError):
    reason = "erasure_incomplete"


class DynamoEraser:
    def __init__(
        self,
        dynamodb: Any,
        tables: TableNames,
        committer: Committer,
        kept: RetentionSettings,
        clock: Callable[[], float],
        *,
        sleep: Callable[[float], None] = time.sleep,
        scan_page_items: int | None = None,
    ) -> None:
        """`scan_page_items`: rows read per scan page (None: DynamoDB's 1 MB pages)."""
        self._dynamodb = dynamodb
        self._scan_page_items = scan_page_items
        self._tables = tables
        self._committer = committer
        self._kept = kept
        self._clock = clock
        self._sleep = sleep

    # Finding

    def scan_rows(self, sender_hashes: Sequence[str], start: Mapping[str, Any] | None) -> RowsPage:
        values: dict[str, Any] = {}
        alone, among = [], []
        for n, hashed in enumerate(sender_hashes):
            values[f":h{n}"] = hashed
            values[f":b{n}"] = bytes.fromhex(hashed)
            alone.append(f":h{n}")
            among.append(f"contains(#hashes, :b{n})")
        kwargs: dict[str, Any] = {
            "TableName": self._tables[Table.WEBHOOK_LOG],
            "FilterExpression": f"#hash IN ({', '.join(alone)}) OR " + " OR ".join(among),
            "ProjectionExpression": "#id",
            "ExpressionAttributeNames": {
                "#hash": schema.SENDER_HASH,
                "#hashes": schema.SENDER_HASHES,
                "#id": schema.ID,
            },
            "ExpressionAttributeValues": items.to_item(values),
            "ConsistentRead": True,
        }
        if self._scan_page_items is not None:
            kwargs["Limit"] = self._scan_page_items
        if start is not None:
            kwargs["ExclusiveStartKey"] = dict(start)
        response = self._dynamodb.scan(**kwargs)
        ids = tuple(str(items.read(item, schema.ID)) for item in response.get("Items", []))
        return RowsPage(log_ids=ids, resume_from=response.get("LastEvaluatedKey") or None)

    def find(self, sender_hash: str) -> Erasable:
        indexed, partition = self._query(Table.DATA, sender_hash), self._partition(sender_hash)
        return Erasable(
            job_ids=tuple(str(item[schema.ID]) for item in self._query(Table.JOBS, sender_hash)),
            data_keys=tuple(
                dict.fromkeys((str(item[schema.PK]), str(item[schema.SK])) for item in [*indexed, *partition])
            ),
            linked=_linked(sender_hash, indexed, partition),
        )

    def _query(self, table: Table, sender_hash: str) -> list[dict[str, Any]]:
        return self._all(
            {
                "TableName": self._tables[table],
                "IndexName": schema.SENDER_INDEX,
                "KeyConditionExpression": "#hash = :hash",
                "ExpressionAttributeNames": {"#hash": schema.SENDER_HASH},
                "ExpressionAttributeValues": items.to_item({":hash": sender_hash}),
            }
        )

    def _partition(self, sender_hash: str) -> list[dict[str, Any]]:
        """The person's partition of the data table, keys only: consistent, so what a task committed
        before this read is in it."""
        return self._all(
            {
                "TableName": self._tables[Table.DATA],
                "KeyConditionExpression": "#pk = :pk",
                "ProjectionExpression": "#pk, #sk, #hash",
                "ExpressionAttributeNames": {"#pk": schema.PK, "#sk": schema.SK, "#hash": schema.SENDER_HASH},
                "ExpressionAttributeValues": items.to_item({":pk": senders.person_partition(sender_hash)}),
                "ConsistentRead": True,
            }
        )

    def _all(self, kwargs: dict[str, Any]) -> list[dict[str, Any]]:
        found: list[dict[str, Any]] = []
        while True:
            response = self._dynamodb.query(**kwargs)
            found.extend(items.from_item(raw) or {} for raw in response.get("Items", []))
            if not response.get("LastEvaluatedKey"):
                return found
            kwargs["ExclusiveStartKey"] = response["LastEvaluatedKey"]

    def _row(self, table: Table, row_id: str) -> dict[str, Any] | None:
        response = self._dynamodb.get_item(
            TableName=self._tables[table], Key=items.key(schema.ID, row_id), ConsistentRead=True
        )
        return items.from_item(response.get("Item"))

    # Erasing

    def erase_log_rows(self, log_ids: Sequence[str]) -> tuple[int, int]:
        rows = parts = 0
        for log_id in log_ids:
            row = self._row(Table.WEBHOOK_LOG, log_id)
            if row is None or row.get(STATUS) == schema.RowStatus.ERASED:
                continue  # TTL deleted it meanwhile, or it was found twice (by its hash and its index item)
            count = int(row.get(BODY_PARTS) or 1)
            parts += self.delete(
                Table.WEBHOOK_LOG, [{schema.ID: webhook_body.part_id(log_id, n)} for n in range(1, count)]
            )
            now = self._clock()
            tombstone = Put(
                table=Table.WEBHOOK_LOG,
                item=erasure.log_tombstone(
                    row, now=now, expires_at=retention.expiry(now, self._kept.raw_deliveries_seconds)
                ),
                condition="attribute_exists(#id)",
                names={"#id": schema.ID},
                on_conflict=OnConflict.FAIL,
            )
            rows += self._committer.commit(tombstone, ()).state is CommitState.COMMITTED
        return rows, parts

    def erase_jobs(self, job_ids: Sequence[str]) -> int:
        return sum(self._erase_job(job_id) for job_id in job_ids)

    def _erase_job(self, job_id: str) -> bool:
        for _ in range(JOB_ATTEMPTS):
            row = self._row(Table.JOBS, job_id)
            if row is None or row.get(STATUS) == schema.RowStatus.ERASED:
                return False
            status = str(row.get(STATUS) or "")
            now = self._clock()
            tombstone = Put(
                table=Table.JOBS,
                item=erasure.job_tombstone(row, now=now, expires_at=retention.expiry(now, self._kept.jobs_seconds)),
                condition="#status = :read",
                names={"#status": STATUS},
                values={":read": status},
                on_conflict=OnConflict.FAIL,
            )
            released: tuple[Write, ...] = ()
            if status == schema.RowStatus.QUEUED and row.get("lane") and row.get("tenant"):
                released = (queued_decrement(str(row["lane"]), str(row["tenant"])),)
            if self._committer.commit(tombstone, released).state is CommitState.COMMITTED:
                return True
        raise ErasureIncomplete(f"job {job_id} kept changing while it was being erased")

    def note_progress(self, job_id: str, progress: Mapping[str, Any]) -> None:
        """Only while the row is pending: a row finished meanwhile is left as it is."""
        note = Update(
            table=Table.JOBS,
            key={schema.ID: job_id},
            expression="SET #progress = :progress, #alive = :now",
            condition="#status = :queued AND attribute_exists(#shard)",
            names={
                "#progress": schema.PROGRESS,
                "#alive": schema.ALIVE_AT,
                "#status": STATUS,
                "#shard": schema.PENDING_SHARD,
            },
            values={":progress": dict(progress), ":now": self._clock(), ":queued": schema.RowStatus.QUEUED},
            on_conflict=OnConflict.SKIP,
        )
        self._committer.commit(note, ())

    def delete(self, table: Table, keys: Sequence[Mapping[str, str]]) -> int:
        for start in range(0, len(keys), BATCH_WRITE_LIMIT):
            self._delete_batch(table, keys[start : start + BATCH_WRITE_LIMIT])
        return len(keys)

    def _delete_batch(self, table: Table, keys: Sequence[Mapping[str, str]]) -> None:
        name = self._tables[table]
        names = KEY_ATTRIBUTES[table]
        request: dict[str, Any] = {
            name: [{"DeleteRequest": {"Key": items.to_item({n: key[n] for n in names})}} for key in keys]
        }
        for attempt in range(UNPROCESSED_RETRIES):
            response = self._dynamodb.batch_write_item(RequestItems=request)
            request = response.get("UnprocessedItems") or {}
            if not request:
                return
            self._sleep(min(1.0, 0.05 * 2**attempt))  # unprocessed items mean throttling
        # Throttling, not the erasure's fault: deferred by the consumer, costing no attempt.
        raise AwsThrottled(f"{sum(len(v) for v in request.values())} deletes left unprocessed")
