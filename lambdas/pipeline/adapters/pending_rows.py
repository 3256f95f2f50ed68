"""One obligation table (webhook log or jobs) as the sweeper sees it.

Finding overdue rows is a query of the sparse `pending_by_age` index, one per shard, never a scan,
a page at a time: a sweep reads the whole index within its time budget, and one that runs out of
time saves where each shard stopped (`keep_position`, one state-table item per source) so the next
resumes there instead of re-reading the oldest rows. The index is KEYS_ONLY, so the rows
themselves are then read with a consistent BatchGetItem: a row the consumer finished between the
query and the read is seen as finished. Every write is conditional on the row still being pending
with the replay count we read, which is what keeps two overlapping sweeps from replaying (or
abandoning) the same row twice. A row DynamoDB's TTL deleted between the query and the read is not
found (its index entry goes with it), and none of these writes can bring it back: each requires
the row to be pending.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import Executor
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from pipeline import schema
from pipeline.adapters import items, row_envelopes
from pipeline.adapters.row_envelopes import UnreplayableRow
from pipeline.domain.consumer import marks
from pipeline.domain.effects import OnConflict, Table, Update, Write
from pipeline.domain.envelope import Envelope
from pipeline.domain.ports import CommitState, Committer
from pipeline.domain.sweep.inputs import PendingRow
from pipeline.schema.rows import ABANDON_REASON, LANE, REPLAYED_AT, REPLAYS, TENANT

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

BATCH_GET_LIMIT = 100
UNPROCESSED_RETRIES = 4
"""BatchGetItem may return part of a batch under throttling; rows still unread after this many
retries are left for the next sweep rather than holding this one up."""

POSITION_PREFIX = "sweep-position#"
"""The state-table item where a source's sweep left each shard of its pending index, e.g.
`sweep-position#webhook`: one attribute per shard, the index key to continue after."""
POSITION_TTL_SECONDS = 24 * 3600
SHARD_READ = "read-to-end"
"""A shard read to its end in the current pass."""

Bookkeeping = Callable[[PendingRow, str], Sequence[Write]]
"""What a row's move to a final status (abandoned, expired) commits with it."""


def no_bookkeeping(row: PendingRow, status: str) -> Sequence[Write]:
    del row, status
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
        state_table: str,
        bookkeeping: Bookkeeping = no_bookkeeping,
        sleep: Callable[[float], None] = time.sleep,
        pool: Executor | None = None,
        log: Any = None,
    ) -> None:
        self._dynamodb = dynamodb
        self._table = table
        self._state_table = state_table
        self._position_key = f"{POSITION_PREFIX}{source}"
        self._positions: dict[str, str | None] | None = None
        """Per shard: the index key to continue after (JSON), SHARD_READ, or None for its start."""
        self._moved: set[str] = set()
        self._saved: dict[str, str | None] = {}
        self._pool = pool
        self._log = log if log is not None else logging.getLogger(__name__)
        self.source = source
        self._logical_table = logical_table
        self._to_envelope = to_envelope
        self._committer = committer
        self._bookkeeping = bookkeeping
        self._sleep = sleep

    # Reading

    def oldest_pending_since(self) -> float | None:
        """The age marker of the oldest pending row of any age: each shard's head, one key and one
        read unit each, whatever the sweep's position in the index."""
        heads = [self._query_page(shard, 1, before=None, start=None)[0] for shard in schema.all_pending_shards()]
        found = [keys[0][0] for keys in heads if keys]
        return min(found) if found else None

    def pages(self, cutoff: float, size: int) -> Iterator[list[PendingRow]]:
        """Every row pending since before `cutoff`, a page of up to `size` keys at a time read
        consistently. A pass goes through every shard once; the shards take turns a page at a
        time, so a sweep that stops early has moved through all of them, and the next sweep
        continues the pass where each shard stopped (`keep_position`). A shard read to its end
        waits for the others; once all are, the next sweep starts a new pass at each one's oldest."""
        if self._positions is None:
            self._positions = self._read_positions()
        shards = schema.all_pending_shards()
        active = [shard for shard in shards if self._positions.get(shard) != SHARD_READ]
        if not active:
            active = list(shards)
            self._positions = dict.fromkeys(shards)
            self._moved.update(shards)
        while active:
            for shard in list(active):
                position = self._positions.get(shard)
                start = json.loads(position) if position else None
                keys, last = self._query_page(shard, size, before=cutoff, start=start)
                self._positions[shard] = SHARD_READ if last is None else json.dumps(last, sort_keys=True)
                self._moved.add(shard)
                if last is None:
                    active.remove(shard)
                rows = self.load([row_id for _, row_id in keys])
                if rows:
                    yield rows

    def keep_position(self, now: float) -> None:
        """Save where each shard's reading stopped, for the next sweep to resume from; nothing is
        written when every shard is where the last sweep left it."""
        if self._positions is None:
            return
        changed = {
            shard: self._positions.get(shard)
            for shard in sorted(self._moved)
            if self._positions.get(shard) != self._saved.get(shard)
        }
        self._moved.clear()
        if not changed:
            return
        sets = {shard: value for shard, value in changed.items() if value is not None}
        removes = [shard for shard, value in changed.items() if value is None]
        names = {f"#{shard}": shard for shard in changed}
        names["#ttl"] = schema.TTL
        values: dict[str, Any] = {f":{shard}": value for shard, value in sets.items()}
        # A position is worth nothing after a day: by then every row it passed was read again.
        values[":ttl"] = int(now) + POSITION_TTL_SECONDS
        update = "SET " + ", ".join([*(f"#{shard} = :{shard}" for shard in sets), "#ttl = :ttl"])
        if removes:
            update += " REMOVE " + ", ".join(f"#{shard}" for shard in removes)
        try:
            self._dynamodb.update_item(
                TableName=self._state_table,
                Key=items.key(schema.PK, self._position_key),
                UpdateExpression=update,
                ExpressionAttributeNames=names,
                ExpressionAttributeValues=items.to_item(values),
            )
        except (BotoCoreError, ClientError) as exc:
            # The next sweep resumes from the position before: it reads this sweep's rows again.
            fields = {"source": self.source, "error": str(exc)}
            self._log.warning("could not keep where this sweep stopped", extra=fields)
            return
        self._saved.update(changed)

    def _read_positions(self) -> dict[str, str | None]:
        try:
            response = self._dynamodb.batch_get_item(
                RequestItems={
                    self._state_table: {"Keys": [items.key(schema.PK, self._position_key)], "ConsistentRead": True}
                }
            )
        except (BotoCoreError, ClientError) as exc:
            # A pass from the start instead: the rows the last sweep passed are read again (and
            # found settling or late), nothing is skipped.
            self._log.warning(
                "could not read where the last sweep stopped; reading from the oldest",
                extra={"source": self.source, "error": str(exc)},
            )
            response = {}
        found = response.get("Responses", {}).get(self._state_table, [])
        item = found[0] if found else {}
        positions = {shard: items.read(item, shard) for shard in schema.all_pending_shards()}
        self._saved = dict(positions)
        return positions

    def _query_page(
        self, shard: str, limit: int, *, before: float | None, start: dict[str, Any] | None
    ) -> tuple[list[tuple[float, str]], dict[str, Any] | None]:
        """One page of the shard's index, oldest first, and the key to continue after (None at
        its end)."""
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
            "Limit": limit,
        }
        if start is not None:
            kwargs["ExclusiveStartKey"] = start
        response = self._dynamodb.query(**kwargs)
        keys = []
        for raw in response.get("Items", []):
            item = items.from_item(raw) or {}
            keys.append((float(item[schema.PENDING_SINCE]), str(item[schema.ID])))
        return keys, response.get("LastEvaluatedKey")

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
                "Keys": [items.key(schema.ID, row_id) for row_id in ids],
                "ConsistentRead": True,
                # What a replay decision and its message need, not the delivery's body: a sweep
                # over a busy lane loads a page of rows at a time, every period, and reading bodies
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
            "Key": items.key(schema.ID, row_id),
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

    def claim_replays(self, rows: Sequence[PendingRow], now: float) -> list[bool]:
        """`claim_replay` for each row, several at once when a pool is given: one conditional
        write each is most of what a replay costs, and one after another they would cap a sweep
        at one write's latency per row (about 150 rows a second)."""
        if self._pool is None or len(rows) < 2:
            return [self.claim_replay(row, now) for row in rows]
        return list(self._pool.map(lambda row: self.claim_replay(row, now), rows))

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
        # The row itself is kept, so an operator can read what was abandoned and why, and a late
        # copy may still finish it.
        return self._give_up(row, now, schema.RowStatus.ABANDONED, f"abandoned: {reason}", reason)

    def expire(self, row: PendingRow, now: float) -> bool:
        """Its retention ran out before it was processed: out of the pending index, so it no
        longer stands at the head of every sweep's window, and never replayed."""
        return self._give_up(row, now, schema.RowStatus.EXPIRED, "expired: retention ran out unprocessed", None)

    def _give_up(self, row: PendingRow, now: float, status: str, error: str, reason: str | None) -> bool:
        condition, names, values = _still_as_read(row)
        changes: dict[str, Any] = {
            marks.STATUS: status,
            marks.UPDATED_AT: now,
            marks.FINISHED_AT: now,
            marks.LAST_ERROR: error,
        }
        if reason is not None:
            changes[ABANDON_REASON] = reason
        names.update({f"#{name}": name for name in changes})
        values.update({f":{name}": value for name, value in changes.items()})
        # Removing the shard drops the row from the pending index. Conditional on the row being
        # pending as read, so a row TTL deleted meanwhile is not written back.
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
        # change, so it happens exactly when the status changes.
        result = self._committer.commit(mark, self._bookkeeping(row, status))
        return result.state is not CommitState.DUPLICATE
