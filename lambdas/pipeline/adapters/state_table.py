"""The state table's counts per lane, in ten-second buckets (domain/jobs/admission.py has the keys):

- drain counts: consumers add the messages their batches finished (`record_drained`, at most one
  UpdateItem a second per instance: `LaneDrain`); the jobs API reads them as the lane's drain
  rate, the sweeper as what a lane finished;
- depth sightings: the sweeper keeps every depth it read (`keep_sighting`), and reads them back as
  the lane's history.

Both expire with the drain counts' TTL. Reads are eventually consistent: a count a moment old is
as good as a fresh one, at half the cost. Unprocessed keys (throttling) are left out, because a
slightly low count is the safe side for both readers (admission sheds a little early, the sweeper
waits a little longer) and retrying would slow the request or the sweep. Botocore errors reach
the caller, which decides what a missing count means.

The table's other items have their own adapters, each written with the thing it belongs to:
budget leases (adapters/leases.py), done-markers (adapters/transactions.py) and tenants' queued-job
counts (adapters/jobs_table.py, in the job's own transaction).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pipeline import schema
from pipeline.adapters import items
from pipeline.domain.jobs import admission
from pipeline.domain.sweep.inputs import DepthSeen, depth_key
from pipeline.schema.state import DEPTH, SEEN_AT


class LaneCounts:
    def __init__(self, dynamodb: Any, state_table: str) -> None:
        self._dynamodb = dynamodb
        self._table = state_table

    def record_drained(self, lane: str, count: int, now: float) -> None:
        """Add `count` finished messages to the lane's current drain bucket. A lost count only
        makes admission a little more cautious, so callers may log and carry on."""
        if count <= 0:
            return
        start = admission.drain_bucket_start(now)
        self._dynamodb.update_item(
            TableName=self._table,
            Key=items.key(schema.PK, admission.drain_key(lane, start)),
            UpdateExpression="ADD #d :n SET #ttl = if_not_exists(#ttl, :ttl)",
            ExpressionAttributeNames={"#d": admission.DRAINED, "#ttl": schema.TTL},
            ExpressionAttributeValues=items.to_item({":n": count, ":ttl": start + admission.DRAIN_BUCKET_TTL_SECONDS}),
        )

    def drained(self, lane: str, starts: Sequence[int]) -> tuple[int | None, int | None]:
        """Messages finished in the buckets starting at `starts`, and the start of the oldest
        bucket holding any; (None, None) when none does."""
        keys = [items.key(schema.PK, admission.drain_key(lane, start)) for start in starts]
        response = self._dynamodb.batch_get_item(RequestItems={self._table: {"Keys": keys}})
        found = response.get("Responses", {}).get(self._table, [])
        if not found:
            return None, None
        drained = sum(int(items.read(item, admission.DRAINED, 0)) for item in found)
        first = min(int(items.read(item, schema.PK).rsplit("#", 1)[1]) for item in found)
        return drained, first

    def keep_sighting(self, lane: str, depth: int, now: float) -> None:
        start = admission.drain_bucket_start(now)
        self._dynamodb.update_item(
            TableName=self._table,
            Key=items.key(schema.PK, depth_key(lane, start)),
            UpdateExpression="SET #depth = :depth, #at = :at, #ttl = :ttl",
            ExpressionAttributeNames={"#depth": DEPTH, "#at": SEEN_AT, "#ttl": schema.TTL},
            ExpressionAttributeValues=items.to_item(
                {":depth": depth, ":at": now, ":ttl": start + admission.DRAIN_BUCKET_TTL_SECONDS}
            ),
        )

    def buckets(self, lane: str, starts: Sequence[int]) -> tuple[dict[int, int], dict[int, DepthSeen | None]]:
        """For each bucket start (at most 50, one BatchGetItem): the messages finished in it, and
        the depth sighted in it. An absent bucket is a quiet ten seconds."""
        by_key: dict[str, tuple[str, int]] = {}
        finished: dict[int, int] = {}
        seen: dict[int, DepthSeen | None] = {}
        for start in starts:
            by_key[admission.drain_key(lane, start)] = ("finished", start)
            by_key[depth_key(lane, start)] = ("seen", start)
            finished[start] = 0
            seen[start] = None
        keys = [items.key(schema.PK, key) for key in by_key]
        response = self._dynamodb.batch_get_item(RequestItems={self._table: {"Keys": keys}})
        for item in response.get("Responses", {}).get(self._table, []):
            kind, start = by_key[items.read(item, schema.PK)]
            if kind == "finished":
                finished[start] = int(items.read(item, admission.DRAINED, 0))
            elif DEPTH in item and SEEN_AT in item:
                seen[start] = DepthSeen(depth=int(items.read(item, DEPTH)), at=float(items.read(item, SEEN_AT)))
        return finished, seen


DRAIN_WRITE_SECONDS = 1.0
"""An instance writes its lane's drain count at most this often."""


class LaneDrain:
    """The consumer's `Drain` port (domain/ports.py): its lane's finished messages.

    One instance lives as long as its Lambda instance, and writes at most once a second: a batch
    finished within a second of the last write adds its count to the next one. At full batches a
    write a batch was a tenth of a write unit a message, but a lane at a few messages a second
    runs batches of one or two, where it was the largest write after the effect itself. Readers
    see a count up to a second late, and an instance retired while holding a count loses it: both
    only make admission a little more cautious, like any lost count (see `record_drained`). A
    failed write keeps the count for the next try."""

    def __init__(self, counts: LaneCounts, lane: str, write_seconds: float = DRAIN_WRITE_SECONDS) -> None:
        self._counts = counts
        self._lane = lane
        self._write_seconds = write_seconds
        self._held = 0
        self._written_at: float | None = None

    def record(self, count: int, now: float) -> None:
        self._held += max(0, count)
        if self._held == 0:
            return
        if self._written_at is not None and 0 <= now - self._written_at < self._write_seconds:
            return
        held, self._held = self._held, 0
        try:
            self._counts.record_drained(self._lane, held, now)
        except Exception:
            self._held += held
            raise
        self._written_at = now
