"""One obligation table (webhook log or jobs) as the sweeper sees it.

Finding overdue rows is a query of the sparse `pending_by_age` index, one per shard, never a scan.
The index is KEYS_ONLY, so the rows themselves are then read with a consistent BatchGetItem: a row
the consumer finished between the query and the read is seen as finished. Every write is
conditional on the row still being pending with the replay count we read, which is what keeps two
overlapping sweeps from replaying (or abandoning) the same row twice. A row DynamoDB's TTL deleted
between the query and the read is not found (its index entry goes with it), and none of these
writes can bring it back: each requires the row to be pending.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from botocore.exceptions import ClientError

from pipeline import schema
from pipeline.adapters import items, row_envelopes
from pipeline.adapters.row_envelopes import LANE, TENANT, UnreplayableRow
from pipeline.domain import marks
from pipeline.domain.effects import OnConflict, Table, Update, Write
from pipeline.domain.envelope import Envelope
from pipeline.domain.ports import CommitState, Committer
from pipeline.domain.sweep_inputs import Overdue, PendingRow

REPLAYS = "replays"
REPLAYED_AT = "replayed_at"
_LOADED = (
    schema.ID,
    schema.SEND_FAILED_AT,
    schema.PENDING_SHARD,
    schema.PENDING_SINCE,
    row_envelopes.LANE,
    row_envelopes.TENANT,
    row_envelopes.KIND,
    row_envelopes.CREATED_AT,
    row_envelopes.RECEIVED_AT,
    row_envelopes.PAYLOAD,
    row_envelopes.DEADLINE,
    row_envelopes.ATTEMPTS,
    REPLAYS,
    REPLAYED_AT,
    schema.TTL,
    schema.PROGRESS,
    schema.ALIVE_AT,
)
ABANDON_REASON = "abandon_reason"

BATCH_GET_LIMIT = 100
UNPROCESSED_RETRIES = 4
"""BatchGetItem may return part of a batch under throttling; rows still unread after this many
retries are left for the next sweep rather than holding this one up."""

Bookkeeping = Callable[[PendingRow], Sequence[Write]]


def no_bookkeeping(row: PendingRow) -> Sequence[Write]:
    del row
    return ()


def _conditional_failed(exc: ClientError) -> bool:
    return exc.response.get("Error", {}).get("Code") == "ConditionalCheckFailedException"


def _still_as_read(row: PendingRow) -> tuple[str, dict[str, str], dict[str, Any]]:
    """The condition every sweeper write carries: still pending, replay count unchanged."""
    names = {"#shard": schema.PENDING_SHARD, "#replays": REPLAYS}
    if row.replays_recorded:
        return "attribute_exists(#shard) AND #replays = :read", names, {":read": row.replays}
    return "attribute_exists(#shard) AND attribute_not_exists(#replays)", names, {}


class PendingRows:
    def __init__(
        self,
        dynamodb: Any,
        table: str,
        *,
        source: str,
        logical_table: Table,
        to_envelope: Callable[[Mapping[str, Any]], Envelope],
        committer: Committer,
        bookkeeping: Bookkeeping = no_bookkeeping,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self._dynamodb = dynamodb
        self._table = table
        self.source = source
        self._logical_table = logical_table
        self._to_envelope = to_envelope
        self._committer = committer
        self._bookkeeping = bookkeeping
        self._sleep = sleep

    # Reading

    def overdue(self, cutoff: float, limit: int) -> Overdue:
        found: list[tuple[float, str]] = []
        oldest: float | None = None
        for shard in schema.all_pending_shards():
            rows = self._query(shard, limit, before=cutoff)
            shard_oldest: float | None
            if rows:
                shard_oldest = rows[0][0]
            else:
                # Nothing overdue in this shard, but the age metric should still be the true age
                # of the oldest pending row, so read the shard's head too (one key, one read unit).
                head = self._query(shard, 1, before=None)
                shard_oldest = head[0][0] if head else None
            if shard_oldest is not None:
                oldest = shard_oldest if oldest is None else min(oldest, shard_oldest)
            found.extend(rows)
        found.sort()
        return Overdue(ids=[row_id for _, row_id in found[:limit]], oldest_pending_since=oldest)

    def _query(self, shard: str, limit: int, *, before: float | None) -> list[tuple[float, str]]:
        names = {"#shard": schema.PENDING_SHARD}
        values: dict[str, Any] = {":shard": shard}
        condition = "#shard = :shard"
        if before is not None:
            names["#since"] = schema.PENDING_SINCE
            values[":cutoff"] = before
            condition += " AND #since < :cutoff"
        kwargs: dict[str, Any] = {
            "TableName": self._table,
            "IndexName": schema.PENDING_INDEX,
            "KeyConditionExpression": condition,
            "ExpressionAttributeNames": names,
            "ExpressionAttributeValues": items.to_item(values),
            "ScanIndexForward": True,  # oldest first
        }
        rows: list[tuple[float, str]] = []
        while len(rows) < limit:
            response = self._dynamodb.query(**kwargs, Limit=limit - len(rows))
            for raw in response.get("Items", []):
                item = items.from_item(raw) or {}
                rows.append((float(item[schema.PENDING_SINCE]), str(item[schema.ID])))
            last = response.get("LastEvaluatedKey")
            if not last:
                break
            kwargs["ExclusiveStartKey"] = last
        return rows

    def load(self, ids: Sequence[str]) -> list[PendingRow]:
        found: list[dict[str, Any]] = []
        for start in range(0, len(ids), BATCH_GET_LIMIT):
            found.extend(self._batch_get(ids[start : start + BATCH_GET_LIMIT]))
        rows = [self._row(item) for item in found if schema.PENDING_SHARD in item]
        rows.sort(key=lambda row: row.pending_since)
        return rows

    def _batch_get(self, ids: Sequence[str]) -> list[dict[str, Any]]:
        request: dict[str, Any] = {
            self._table: {
                "Keys": [{schema.ID: {"S": row_id}} for row_id in ids],
                "ConsistentRead": True,
                # What a replay decision and its message need, not the delivery's body: a sweep
                # over a busy lane loads up to rows_per_run rows every period, and reading bodies
                # made it the largest cost of the local runtime under a backlog (the read units
                # are the same either way).
                "ProjectionExpression": ", ".join(f"#{n}" for n in range(len(_LOADED))),
                "ExpressionAttributeNames": {f"#{n}": name for n, name in enumerate(_LOADED)},
            }
        }
        found: list[dict[str, Any]] = []
        for attempt in range(UNPROCESSED_RETRIES + 1):
            response = self._dynamodb.batch_get_item(RequestItems=request)
            found.extend(items.from_item(raw) or {} for raw in response.get("Responses", {}).get(self._table, []))
            request = response.get("UnprocessedKeys") or {}
            if not request:
                break
            self._sleep(min(1.0, 0.05 * 2**attempt))
        return found

    def _row(self, item: Mapping[str, Any]) -> PendingRow:
        envelope: Envelope | None = None
        problem: str | None = None
        try:
            envelope = self._to_envelope(item)
        except (UnreplayableRow, TypeError, ValueError) as exc:
            problem = f"cannot rebuild its message: {exc}"
        replayed_at = item.get(REPLAYED_AT)
        expires_at = item.get(schema.TTL)
        alive_at = item.get(schema.ALIVE_AT)
        return PendingRow(
            source=self.source,
            id=str(item[schema.ID]),
            lane=str(item.get(LANE) or ""),
            tenant=str(item.get(TENANT) or ""),
            pending_since=float(item[schema.PENDING_SINCE]),
            replays=int(item.get(REPLAYS) or 0),
            replays_recorded=REPLAYS in item,
            replayed_at=None if replayed_at is None else float(replayed_at),
            send_failed=schema.SEND_FAILED_AT in item,
            envelope=envelope,
            problem=problem,
            expires_at=None if expires_at is None else float(expires_at),
            alive_at=None if alive_at is None else float(alive_at),
        )

    # Writing, each conditional on the row being as we read it

    def _update(self, row_id: str, update: str, condition: str, names: dict[str, str], values: dict[str, Any]) -> bool:
        kwargs: dict[str, Any] = {
            "TableName": self._table,
            "Key": {schema.ID: {"S": row_id}},
            "UpdateExpression": update,
            "ConditionExpression": condition,
            "ExpressionAttributeNames": names,
        }
        if values:
            kwargs["ExpressionAttributeValues"] = items.to_item(values)
        try:
            self._dynamodb.update_item(**kwargs)
        except ClientError as exc:
            if _conditional_failed(exc):
                return False
            raise
        return True

    def claim_replay(self, row: PendingRow, now: float) -> bool:
        condition, names, values = _still_as_read(row)
        names["#at"] = REPLAYED_AT
        values.update({":next": row.replays + 1, ":now": now})
        return self._update(row.id, "SET #replays = :next, #at = :now", condition, names, values)

    def return_replay(self, row: PendingRow) -> None:
        names = {"#shard": schema.PENDING_SHARD, "#replays": REPLAYS, "#at": REPLAYED_AT}
        values: dict[str, Any] = {":claimed": row.replays + 1, ":read": row.replays}
        if row.replayed_at is None:
            update = "SET #replays = :read REMOVE #at"
        else:
            update = "SET #replays = :read, #at = :previous"
            values[":previous"] = row.replayed_at
        # If this fails the row was finished or claimed again meanwhile; either way nothing is lost.
        self._update(row.id, update, "attribute_exists(#shard) AND #replays = :claimed", names, values)

    def abandon(self, row: PendingRow, now: float, reason: str) -> bool:
        condition, names, values = _still_as_read(row)
        changes = {
            marks.STATUS: schema.RowStatus.ABANDONED,
            marks.UPDATED_AT: now,
            marks.FINISHED_AT: now,
            marks.LAST_ERROR: f"abandoned: {reason}",
            ABANDON_REASON: reason,
        }
        names.update({f"#{name}": name for name in changes})
        values.update({f":{name}": value for name, value in changes.items()})
        # Removing the shard drops the row from the pending index; the row itself is kept, so an
        # operator can read what was abandoned and why, and a late copy may still finish it.
        mark = Update(
            table=self._logical_table,
            key={schema.ID: row.id},
            expression="SET " + ", ".join(f"#{name} = :{name}" for name in changes) + " REMOVE #shard",
            condition=condition,
            names=names,
            values=values,
            on_conflict=OnConflict.FAIL,
        )
        # Bookkeeping (a job's place in its tenant's queued count) commits with the status
        # change, so it happens exactly when the abandonment does.
        result = self._committer.commit(mark, self._bookkeeping(row))
        return result.state is not CommitState.DUPLICATE
