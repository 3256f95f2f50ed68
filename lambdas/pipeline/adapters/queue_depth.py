"""A lane as the sweeper sees it: its depth now, and its recent history (what its consumers
finished, and the depths earlier sweeps saw).

Depth counts everything the lane still holds: visible, in flight and delayed (a deferred message
sits delayed; its row is waiting, not lost). The figures are approximate, which is fine here: they
only decide whether a row may still be queued. Every depth read is kept in the state table as a
sighting, in ten-second buckets beside the consumers' drain counts (domain/admission.py), which is
where the history is read from; both expire with the drain counts' TTL.

One per sweep: every answer is kept for the run, never across runs. A read that fails is logged
and answered with "unknown", which the rule treats as busy (see domain/sweep.py).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from pipeline import schema
from pipeline.domain import admission
from pipeline.domain.sweep import DepthSeen, LaneHistory, LaneView, depth_key

BACKLOG_ATTRIBUTES = (
    "ApproximateNumberOfMessages",
    "ApproximateNumberOfMessagesNotVisible",
    "ApproximateNumberOfMessagesDelayed",
)
DEPTH = "depth"
SEEN_AT = "seen_at"
BATCH_GET_LIMIT = 100


class LaneBacklog:
    def __init__(
        self, sqs: Any, dynamodb: Any, state_table: str, queue_urls: Mapping[str, str], log: Any, *, now: float
    ) -> None:
        self._sqs = sqs
        self._dynamodb = dynamodb
        self._state_table = state_table
        self._queue_urls = queue_urls
        self._log = log
        self._now = now
        self._views: dict[str, LaneView] = {}
        self._finished: dict[str, dict[int, int]] = {}
        self._seen: dict[str, dict[int, DepthSeen | None]] = {}
        self._unreadable: set[str] = set()

    def view(self, lane: str) -> LaneView:
        if lane not in self._views:
            self._views[lane] = self._read_depth(lane)
            depth = self._views[lane].depth
            if depth is not None:
                self._keep_sighting(lane, depth)
        return self._views[lane]

    def _read_depth(self, lane: str) -> LaneView:
        url = self._queue_urls.get(lane)
        if url is None:
            return LaneView(depth=None)
        try:
            attributes = self._sqs.get_queue_attributes(QueueUrl=url, AttributeNames=list(BACKLOG_ATTRIBUTES))
        except (BotoCoreError, ClientError) as exc:
            self._log.warning(
                "could not read the lane's depth; treating it as busy", extra={"lane": lane, "error": str(exc)}
            )
            return LaneView(depth=None)
        values = attributes.get("Attributes", {})
        return LaneView(
            depth=sum(int(values.get(name, 0)) for name in BACKLOG_ATTRIBUTES),
            in_flight=int(values.get("ApproximateNumberOfMessagesNotVisible", 0)),
        )

    def _keep_sighting(self, lane: str, depth: int) -> None:
        start = admission.drain_bucket_start(self._now)
        try:
            self._dynamodb.update_item(
                TableName=self._state_table,
                Key={schema.PK: {"S": depth_key(lane, start)}},
                UpdateExpression="SET #depth = :depth, #at = :at, #ttl = :ttl",
                ExpressionAttributeNames={"#depth": DEPTH, "#at": SEEN_AT, "#ttl": schema.TTL},
                ExpressionAttributeValues={
                    ":depth": {"N": str(depth)},
                    ":at": {"N": repr(self._now)},
                    ":ttl": {"N": str(start + admission.DRAIN_BUCKET_TTL_SECONDS)},
                },
            )
        except (BotoCoreError, ClientError) as exc:
            # A missing sighting only leaves later sweeps one fewer to count from.
            self._log.warning("could not keep the lane's depth", extra={"lane": lane, "error": str(exc)})

    def history(self, lane: str, since: float) -> LaneHistory | None:
        if lane in self._unreadable:
            return None
        # Buckets older than the drain counts' TTL may be gone, so the history never reaches
        # further back than that: a shorter history only keeps a row waiting longer.
        first = max(
            math.floor(since / admission.DRAIN_BUCKET_SECONDS) * admission.DRAIN_BUCKET_SECONDS,
            admission.drain_bucket_start(self._now - admission.DRAIN_BUCKET_TTL_SECONDS),
        )
        starts = range(first, admission.drain_bucket_start(self._now) + 1, admission.DRAIN_BUCKET_SECONDS)
        finished = self._finished.setdefault(lane, {})
        seen = self._seen.setdefault(lane, {})
        missing = [start for start in starts if start not in finished]
        try:
            for offset in range(0, len(missing), BATCH_GET_LIMIT // 2):
                self._read_buckets(lane, missing[offset : offset + BATCH_GET_LIMIT // 2], finished, seen)
        except (BotoCoreError, ClientError) as exc:
            self._unreadable.add(lane)
            self._log.warning(
                "could not read the lane's history; no row is called drained past",
                extra={"lane": lane, "error": str(exc)},
            )
            return None
        return LaneHistory(
            finished={start: finished[start] for start in starts},
            seen=[sighting for start in starts if (sighting := seen[start]) is not None],
        )

    def _read_buckets(
        self, lane: str, starts: list[int], finished: dict[int, int], seen: dict[int, DepthSeen | None]
    ) -> None:
        by_key: dict[str, tuple[str, int]] = {}
        for start in starts:
            by_key[admission.drain_key(lane, start)] = ("finished", start)
            by_key[depth_key(lane, start)] = ("seen", start)
            finished[start] = 0
            seen[start] = None
        keys = [{schema.PK: {"S": key}} for key in by_key]
        # Eventually consistent: a count a moment old is as good as a fresh one. An absent bucket
        # is a quiet ten seconds, and so is an unprocessed key (throttling): a low count only
        # keeps a row waiting a little longer, which is the safe side.
        response = self._dynamodb.batch_get_item(RequestItems={self._state_table: {"Keys": keys}})
        for item in response.get("Responses", {}).get(self._state_table, []):
            kind, start = by_key[item[schema.PK]["S"]]
            if kind == "finished":
                finished[start] = int(item.get(admission.DRAINED, {}).get("N", "0"))
            elif DEPTH in item and SEEN_AT in item:
                seen[start] = DepthSeen(depth=int(item[DEPTH]["N"]), at=float(item[SEEN_AT]["N"]))
