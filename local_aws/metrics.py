"""The metrics CloudWatch would hold: the handlers' embedded-metric-format lines, the SQS metrics
AWS publishes for every queue (moto publishes none), and Lambda's invocation metrics.

Everything is kept in memory for the alarm evaluator and the console, and mirrored into moto's
CloudWatch so other processes (the operator CLI) can read it with GetMetricData.
"""

from __future__ import annotations

import json
import math
import threading
import time
from collections import defaultdict, deque
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

Key = tuple[str, str, frozenset[tuple[str, str]]]
_KEEP_SECONDS = 300
"""Per-second statistics are kept this long unless told how far back their readers look
(`MetricsStore.keep_for`: the runtime keeps what its alarms read). Kept for an hour, they grew the
runtime's memory through the whole of a ten-minute soak. Totals are kept apart, for the whole run."""
_MIRROR_KEEP_SECONDS = 120
"""What the CloudWatch mirror keeps for other processes' GetMetricData: the operator tools read the
newest datapoint (ops/messages.py) and the mirror is published every few seconds. A quarter of an
hour, it grew the runtime's memory through the first 15 minutes of every long run."""
VALUES_PER_BUCKET = 200
"""Values kept per metric per second for percentiles; past it, a second's percentiles are read
from a sample of its first values (a webhook door at 2000 a second keeps a tenth)."""


def key(namespace: str, name: str, dimensions: Mapping[str, str]) -> Key:
    return (namespace, name, frozenset((str(k), str(v)) for k, v in dimensions.items()))


@dataclass
class Bucket:
    """One second of one metric, as CloudWatch's statistic set plus a few values for percentiles.
    Memory is per metric per second, not per datapoint: a soak at 50 webhooks a second for an hour
    kept 2 million datapoints before."""

    second: int
    unit: str
    count: int = 0
    total: float = 0.0
    low: float = math.inf
    high: float = -math.inf
    last: float = 0.0
    values: list[float] = field(default_factory=list)

    def add(self, value: float) -> None:
        self.count += 1
        self.total += value
        self.low = min(self.low, value)
        self.high = max(self.high, value)
        self.last = value
        if len(self.values) < VALUES_PER_BUCKET:
            self.values.append(value)


class MetricsStore:
    def __init__(self, keep_seconds: float = _KEEP_SECONDS) -> None:
        self._keep_seconds = keep_seconds
        self._series: dict[Key, deque[Bucket]] = defaultdict(deque)
        self._totals: dict[Key, float] = defaultdict(float)
        self._lock = threading.Lock()
        self._pending: dict[Key, Bucket] = {}

    def put(
        self,
        namespace: str,
        name: str,
        dimensions: Mapping[str, str],
        value: float,
        unit: str = "None",
        timestamp: float | None = None,
    ) -> None:
        at = timestamp if timestamp is not None else time.time()
        second = int(at)
        metric = key(namespace, name, dimensions)
        value = float(value)
        with self._lock:
            series = self._series[metric]
            bucket = _bucket_for(series, second, unit)
            bucket.add(value)
            self._totals[metric] += value
            while series and series[0].second < second - self._keep_seconds:
                series.popleft()
            pending = self._pending.get(metric)
            if pending is None:
                pending = self._pending[metric] = Bucket(second, unit)
            pending.second = max(pending.second, second)
            pending.add(value)

    def keep_for(self, seconds: float) -> None:
        """Keep per-second statistics `seconds` back from the newest (what the slowest reader looks
        at), no longer."""
        if seconds <= 0:
            raise ValueError(f"metrics must be kept for a positive time, got {seconds}")
        with self._lock:
            self._keep_seconds = seconds

    def _buckets(self, metric: Key, start: float, end: float) -> list[Bucket]:
        with self._lock:
            series = self._series.get(metric)
            if not series:
                return []
            return [b for b in series if b.second + 1 > start and b.second < end]

    def statistic(
        self, namespace: str, name: str, dimensions: Mapping[str, str], statistic: str, start: float, end: float
    ) -> float | None:
        buckets = self._buckets(key(namespace, name, dimensions), start, end)
        if not buckets:
            return None
        return _aggregate(buckets, statistic)

    def total(self, namespace: str, name: str, dimensions: Mapping[str, str]) -> float:
        with self._lock:
            return self._totals.get(key(namespace, name, dimensions), 0.0)

    def total_matching(self, namespace: str, name: str, dimensions: Mapping[str, str]) -> float:
        """Sum over every series of the metric whose dimensions include `dimensions`."""
        wanted = {(str(k), str(v)) for k, v in dimensions.items()}
        with self._lock:
            return sum(
                total
                for (ns, metric, dims), total in self._totals.items()
                if ns == namespace and metric == name and wanted <= dims
            )

    def latest(self, namespace: str, name: str, dimensions: Mapping[str, str]) -> float | None:
        with self._lock:
            series = self._series.get(key(namespace, name, dimensions))
            return series[-1].last if series else None

    def drain_pending(self) -> list[tuple[Key, Bucket]]:
        """What each metric recorded since the last call, as one statistic set stamped with its
        last second: the mirror in moto's CloudWatch keeps one datum per metric per publish."""
        with self._lock:
            pending, self._pending = self._pending, {}
        return list(pending.items())

    def record_emf(self, line: str) -> bool:
        """Read one embedded-metric-format line; True when it was one."""
        if '"_aws"' not in line:
            return False
        try:
            document = json.loads(line)
        except json.JSONDecodeError:
            return False
        envelope = document.get("_aws") if isinstance(document, dict) else None
        if not isinstance(envelope, dict):
            return False
        timestamp = float(envelope.get("Timestamp", time.time() * 1000)) / 1000
        for directive in envelope.get("CloudWatchMetrics", []):
            namespace = directive.get("Namespace", "")
            for dimension_set in directive.get("Dimensions", []) or [[]]:
                dimensions = {name: str(document.get(name, "")) for name in dimension_set}
                for definition in directive.get("Metrics", []):
                    name = definition["Name"]
                    for value in _values(document.get(name)):
                        self.put(namespace, name, dimensions, value, definition.get("Unit", "None"), timestamp)
        return True


def _values(raw: Any) -> Iterable[float]:
    if isinstance(raw, list):
        return [float(v) for v in raw]
    if raw is None:
        return []
    return [float(raw)]


def _bucket_for(series: deque[Bucket], second: int, unit: str) -> Bucket:
    if series and series[-1].second == second:
        return series[-1]
    if series and series[-1].second > second:
        # A late datapoint (an EMF line stamped a second ago): file it where it belongs.
        for bucket in reversed(series):
            if bucket.second == second:
                return bucket
            if bucket.second < second:
                break
    bucket = Bucket(second, unit)
    series.append(bucket)
    if len(series) > 1 and series[-2].second > second:
        ordered = sorted(series, key=lambda b: b.second)
        series.clear()
        series.extend(ordered)
    return bucket


def _aggregate(buckets: list[Bucket], statistic: str) -> float:
    if statistic == "Maximum":
        return max(b.high for b in buckets)
    if statistic == "Minimum":
        return min(b.low for b in buckets)
    if statistic == "Sum":
        return sum(b.total for b in buckets)
    if statistic == "SampleCount":
        return float(sum(b.count for b in buckets))
    if statistic == "Average":
        return sum(b.total for b in buckets) / sum(b.count for b in buckets)
    if statistic.startswith("p"):
        ordered = sorted(v for b in buckets for v in b.values)
        index = min(len(ordered) - 1, max(0, round(float(statistic[1:]) / 100 * len(ordered)) - 1))
        return ordered[index]
    raise ValueError(f"statistic {statistic!r} is not supported locally")


def publish_to_cloudwatch(store: MetricsStore, cloudwatch: Any) -> int:
    """Mirror what was recorded since the last call into moto's CloudWatch, one statistic set per
    metric; returns the statistic sets sent."""
    pending = store.drain_pending()
    by_namespace: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for (namespace, name, dimensions), bucket in pending:
        by_namespace[namespace].append(
            {
                "MetricName": name,
                "Dimensions": [{"Name": k, "Value": v} for k, v in sorted(dimensions)],
                "Timestamp": float(bucket.second),
                "StatisticValues": {
                    "SampleCount": float(bucket.count),
                    "Sum": bucket.total,
                    "Minimum": bucket.low,
                    "Maximum": bucket.high,
                },
                "Unit": bucket.unit if bucket.unit in _CLOUDWATCH_UNITS else "None",
            }
        )
    for namespace, data in by_namespace.items():
        for start in range(0, len(data), 500):
            cloudwatch.put_metric_data(Namespace=namespace, MetricData=data[start : start + 500])
    return len(pending)


_CLOUDWATCH_UNITS = frozenset(
    {"Seconds", "Microseconds", "Milliseconds", "Bytes", "Kilobytes", "Megabytes", "Count", "Percent", "None"}
)


def trim_cloudwatch(keep_seconds: float = _MIRROR_KEEP_SECONDS) -> int:
    """Drop mirrored datums older than `keep_seconds` from moto's CloudWatch, which keeps every
    datum for ever; returns how many went. (CloudWatch keeps them longer; nothing here reads
    further back than a quarter of an hour.)"""
    from moto.cloudwatch.models import cloudwatch_backends

    from local_aws.deploy import ACCOUNT, REGION

    backend = cloudwatch_backends[ACCOUNT][REGION]
    cutoff = time.time() - keep_seconds
    before = len(backend.metric_data)
    backend.metric_data = [d for d in backend.metric_data if _epoch(d.timestamp) >= cutoff]
    return before - len(backend.metric_data)


def _epoch(timestamp: Any) -> float:
    if isinstance(timestamp, datetime):
        aware = timestamp if timestamp.tzinfo else timestamp.replace(tzinfo=UTC)
        return aware.timestamp()
    return float(timestamp)
