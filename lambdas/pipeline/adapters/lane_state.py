"""Lane state for admission control: queue depth from SQS, drain rate from the state table.

Reading it costs two calls (GetQueueAttributes, BatchGetItem), so each handler instance keeps a
snapshot per lane for about a second: at steady state admission makes no AWS call at all, and a
burst of a thousand jobs a second costs two calls a second per instance.

Consumers feed the drain rate with `record_drained` (see domain/admission.py for the key).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from pipeline import schema
from pipeline.domain import admission
from pipeline.domain.admission import LaneSnapshot

_QUEUE_ATTRIBUTES = (
    "ApproximateNumberOfMessages",
    "ApproximateNumberOfMessagesDelayed",
    "ApproximateNumberOfMessagesNotVisible",
)


class LaneStateUnavailable(RuntimeError):
    pass


class LaneStateReader:
    def __init__(self, sqs: Any, dynamodb: Any, state_table: str, queue_urls: Mapping[str, str]) -> None:
        self._sqs = sqs
        self._dynamodb = dynamodb
        self._state_table = state_table
        self._queue_urls = dict(queue_urls)

    def read(self, lane: str, now: float) -> LaneSnapshot:
        starts, window = admission.drain_window(now)
        try:
            attributes = self._sqs.get_queue_attributes(
                QueueUrl=self._queue_urls[lane], AttributeNames=list(_QUEUE_ATTRIBUTES)
            )["Attributes"]
            drained, first_bucket = self._drained(lane, starts)
        except (ClientError, BotoCoreError) as exc:
            raise LaneStateUnavailable(f"cannot read the state of lane {lane}: {exc}") from exc
        return LaneSnapshot(
            backlog=int(attributes.get("ApproximateNumberOfMessages", 0))
            + int(attributes.get("ApproximateNumberOfMessagesDelayed", 0)),
            in_flight=int(attributes.get("ApproximateNumberOfMessagesNotVisible", 0)),
            drained=drained,
            # Measured from the first bucket with work in it: a lane idle for most of the window
            # and busy for the last few seconds has a pace, not an average over its idle time.
            window_seconds=window if first_bucket is None else now - first_bucket,
        )

    def _drained(self, lane: str, starts: list[int]) -> tuple[int | None, int | None]:
        """Messages finished in the window, and the start of the oldest bucket holding any."""
        keys = [{schema.PK: {"S": admission.drain_key(lane, start)}} for start in starts]
        # Eventually consistent: a count a moment old is as good as a fresh one, at half the cost.
        response = self._dynamodb.batch_get_item(RequestItems={self._state_table: {"Keys": keys}})
        items = response.get("Responses", {}).get(self._state_table, [])
        if not items:
            return None, None
        # Unprocessed keys (throttling) are left out: a slightly low count sheds a little early,
        # which is the safe side, and retrying here would slow the request being admitted.
        drained = sum(int(item.get(admission.DRAINED, {}).get("N", "0")) for item in items)
        first = min(int(item[schema.PK]["S"].rsplit("#", 1)[1]) for item in items)
        return drained, first

    def record_drained(self, lane: str, count: int, now: float) -> None:
        """For consumers: add `count` finished messages to the lane's current drain bucket. One
        UpdateItem per batch; raises botocore errors (a lost count only makes admission a little
        more cautious, so callers may log and carry on)."""
        if count <= 0:
            return
        start = admission.drain_bucket_start(now)
        self._dynamodb.update_item(
            TableName=self._state_table,
            Key={schema.PK: {"S": admission.drain_key(lane, start)}},
            UpdateExpression="ADD #d :n SET #ttl = if_not_exists(#ttl, :ttl)",
            ExpressionAttributeNames={"#d": admission.DRAINED, "#ttl": schema.TTL},
            ExpressionAttributeValues={
                ":n": {"N": str(count)},
                ":ttl": {"N": str(start + admission.DRAIN_BUCKET_TTL_SECONDS)},
            },
        )


class CachedLaneState:
    """One snapshot per lane, reused for `ttl_seconds`. A failed read is cached as None for the
    same time (admission then admits, see `admission.decide`), so an SQS or DynamoDB outage
    does not add two failing calls to every request."""

    def __init__(
        self,
        reader: LaneStateReader,
        ttl_seconds: float,
        clock: Callable[[], float],
        on_error: Callable[[str, Exception], None],
    ) -> None:
        self._reader = reader
        self._ttl = ttl_seconds
        self._clock = clock
        self._on_error = on_error
        self._cache: dict[str, tuple[float, LaneSnapshot | None]] = {}

    def get(self, lane: str) -> LaneSnapshot | None:
        now = self._clock()
        cached = self._cache.get(lane)
        if cached is not None and now - cached[0] < self._ttl:
            return cached[1]
        snapshot: LaneSnapshot | None
        try:
            snapshot = self._reader.read(lane, now)
        except LaneStateUnavailable as exc:
            self._on_error(lane, exc)
            snapshot = None
        self._cache[lane] = (now, snapshot)
        return snapshot
