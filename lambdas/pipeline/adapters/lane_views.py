"""A lane as its two readers see it, read through its queue (adapters/lane_queue.py) and the state
table's counts (adapters/state_table.py); nothing here calls AWS itself.

- Admission (the jobs API): `LaneStateReader` reads the queue's depth and the lane's drain counts,
  two calls, so each handler instance keeps a snapshot per lane for about a second
  (`CachedLaneState`): at steady state admission makes no AWS call at all, and a burst of a
  thousand jobs a second costs two calls a second per instance.
- The sweeper: `LaneBacklog` answers, for one sweep, how deep each lane is now (keeping every depth
  it reads as a sighting) and what it finished and was seen holding since a given time. Depth
  counts everything the lane still holds: visible, in flight and delayed. The figures are
  approximate, which is fine: they only decide whether a row may still be queued. Every answer
  is kept for the run, never across runs; a read that fails is logged and answered "unknown",
  which the rule treats as busy (see domain/sweep/verdict.py).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from pipeline.adapters import lane_queue
from pipeline.adapters.state_table import LaneCounts
from pipeline.domain.jobs import admission
from pipeline.domain.jobs.admission import LaneSnapshot
from pipeline.domain.sweep.inputs import DepthSeen, LaneHistory, LaneView

BUCKETS_PER_READ = 50
"""Two keys a bucket (drain count, sighting) in one BatchGetItem of at most 100."""


class LaneStateUnavailable(RuntimeError):
    pass


class LaneStateReader:
    def __init__(self, sqs: Any, dynamodb: Any, state_table: str, queue_urls: Mapping[str, str]) -> None:
        self._sqs = sqs
        self._counts = LaneCounts(dynamodb, state_table)
        self._queue_urls = dict(queue_urls)

    def read(self, lane: str, now: float) -> LaneSnapshot:
        starts, window = admission.drain_window(now)
        try:
            depth = lane_queue.depth(self._sqs, self._queue_urls[lane])
            drained, first_bucket = self._counts.drained(lane, starts)
        except (ClientError, BotoCoreError) as exc:
            raise LaneStateUnavailable(f"cannot read the state of lane {lane}: {exc}") from exc
        return LaneSnapshot(
            backlog=depth.visible + depth.delayed,
            in_flight=depth.in_flight,
            drained=drained,
            # Measured from the first bucket with work in it: a lane idle for most of the window
            # and busy for the last few seconds has a pace, not an average over its idle time.
            window_seconds=window if first_bucket is None else now - first_bucket,
        )


class CachedLaneState:
    """The jobs API's `LaneStates` port: one snapshot per lane, reused for `ttl_seconds`. A failed
    read is cached as None for the same time (admission then admits, see `admission.decide`), so
    an SQS or DynamoDB outage does not add two failing calls to every request."""

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


class LaneBacklog:
    """The sweeper's view of every lane, for one sweep."""

    def __init__(
        self, sqs: Any, dynamodb: Any, state_table: str, queue_urls: Mapping[str, str], log: Any, *, now: float
    ) -> None:
        self._sqs = sqs
        self._counts = LaneCounts(dynamodb, state_table)
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
            depth = lane_queue.depth(self._sqs, url)
        except (BotoCoreError, ClientError) as exc:
            self._log.warning(
                "could not read the lane's depth; treating it as busy", extra={"lane": lane, "error": str(exc)}
            )
            return LaneView(depth=None)
        return LaneView(depth=depth.total, in_flight=depth.in_flight)

    def _keep_sighting(self, lane: str, depth: int) -> None:
        try:
            self._counts.keep_sighting(lane, depth, self._now)
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
            for offset in range(0, len(missing), BUCKETS_PER_READ):
                read_finished, read_seen = self._counts.buckets(lane, missing[offset : offset + BUCKETS_PER_READ])
                finished.update(read_finished)
                seen.update(read_seen)
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
