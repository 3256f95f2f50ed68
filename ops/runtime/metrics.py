"""The metrics CloudWatch would hold: the handlers' embedded-metric-format lines, the SQS metrics
AWS publishes for every queue (moto publishes none), and Lambda's invocation metrics.

Everything is kept in memory for the alarm evaluator and the console, and mirrored into moto's
CloudWatch so other processes (the operator CLI) can read it with GetMetricData.
"""

from __future__ import annotations

import json
import threading
import time
from collections import defaultdict, deque
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

Key = tuple[str, str, frozenset[tuple[str, str]]]
_KEEP_SECONDS = 3600


def key(namespace: str, name: str, dimensions: Mapping[str, str]) -> Key:
    return (namespace, name, frozenset((str(k), str(v)) for k, v in dimensions.items()))


@dataclass(frozen=True)
class Datapoint:
    timestamp: float
    value: float
    unit: str


class MetricsStore:
    def __init__(self) -> None:
        self._points: dict[Key, deque[Datapoint]] = defaultdict(deque)
        self._lock = threading.Lock()
        self._pending: list[tuple[Key, Datapoint]] = []

    def put(
        self,
        namespace: str,
        name: str,
        dimensions: Mapping[str, str],
        value: float,
        unit: str = "None",
        timestamp: float | None = None,
    ) -> None:
        point = Datapoint(timestamp if timestamp is not None else time.time(), float(value), unit)
        metric = key(namespace, name, dimensions)
        with self._lock:
            series = self._points[metric]
            series.append(point)
            while series and series[0].timestamp < point.timestamp - _KEEP_SECONDS:
                series.popleft()
            self._pending.append((metric, point))

    def points(self, namespace: str, name: str, dimensions: Mapping[str, str], start: float, end: float) -> list[float]:
        with self._lock:
            series = list(self._points.get(key(namespace, name, dimensions), ()))
        return [p.value for p in series if start <= p.timestamp < end]

    def statistic(
        self, namespace: str, name: str, dimensions: Mapping[str, str], statistic: str, start: float, end: float
    ) -> float | None:
        values = self.points(namespace, name, dimensions, start, end)
        if not values:
            return None
        return _aggregate(values, statistic)

    def total(self, namespace: str, name: str, dimensions: Mapping[str, str]) -> float:
        with self._lock:
            return sum(p.value for p in self._points.get(key(namespace, name, dimensions), ()))

    def total_matching(self, namespace: str, name: str, dimensions: Mapping[str, str]) -> float:
        """Sum over every series of the metric whose dimensions include `dimensions`."""
        wanted = {(str(k), str(v)) for k, v in dimensions.items()}
        with self._lock:
            return sum(
                p.value
                for (ns, metric, dims), series in self._points.items()
                if ns == namespace and metric == name and wanted <= dims
                for p in series
            )

    def latest(self, namespace: str, name: str, dimensions: Mapping[str, str]) -> float | None:
        with self._lock:
            series = self._points.get(key(namespace, name, dimensions))
            return series[-1].value if series else None

    def drain_pending(self) -> list[tuple[Key, Datapoint]]:
        with self._lock:
            pending, self._pending = self._pending, []
        return pending

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


def _aggregate(values: list[float], statistic: str) -> float:
    if statistic == "Maximum":
        return max(values)
    if statistic == "Minimum":
        return min(values)
    if statistic == "Sum":
        return sum(values)
    if statistic == "SampleCount":
        return float(len(values))
    if statistic == "Average":
        return sum(values) / len(values)
    if statistic.startswith("p"):
        ordered = sorted(values)
        index = min(len(ordered) - 1, max(0, round(float(statistic[1:]) / 100 * len(ordered)) - 1))
        return ordered[index]
    raise ValueError(f"statistic {statistic!r} is not supported locally")


def publish_to_cloudwatch(store: MetricsStore, cloudwatch: Any) -> int:
    """Mirror what was recorded since the last call into moto's CloudWatch; returns datapoints sent."""
    pending = store.drain_pending()
    by_namespace: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for (namespace, name, dimensions), point in pending:
        by_namespace[namespace].append(
            {
                "MetricName": name,
                "Dimensions": [{"Name": k, "Value": v} for k, v in sorted(dimensions)],
                "Timestamp": point.timestamp,
                "Value": point.value,
                "Unit": point.unit if point.unit in _CLOUDWATCH_UNITS else "None",
            }
        )
    for namespace, data in by_namespace.items():
        for start in range(0, len(data), 500):
            cloudwatch.put_metric_data(Namespace=namespace, MetricData=data[start : start + 500])
    return len(pending)


_CLOUDWATCH_UNITS = frozenset(
    {"Seconds", "Microseconds", "Milliseconds", "Bytes", "Kilobytes", "Megabytes", "Count", "Percent", "None"}
)
