"""What a consumer handler left behind for a test to read: its log records and its EMF metric
documents.
"""

from __future__ import annotations

import json
from typing import Any


def log_lines(caplog: Any) -> list[dict[str, Any]]:
    """The handler's log records as dicts (message, level and the `extra` fields). Read through
    caplog: Powertools binds its stream handler once per process, so stdout capture would miss
    the log lines of every logger but the first."""
    return [{"message": r.getMessage(), "level": r.levelname, **r.__dict__} for r in caplog.records]


def stdout_records(text: str) -> list[dict[str, Any]]:
    """The JSON documents a handler printed: its EMF metric documents."""
    found = []
    for raw in text.splitlines():
        line = raw.strip()
        if line.startswith("{"):
            try:
                found.append(json.loads(line))
            except json.JSONDecodeError:
                continue
    return found


def metric_total(printed: list[dict[str, Any]], name: str, **dimensions: str) -> float:
    total = 0.0
    for doc in printed:
        if "_aws" not in doc or name not in doc:
            continue
        if all(doc.get(k) == v for k, v in dimensions.items()):
            value = doc[name]
            total += sum(value) if isinstance(value, list) else value
    return total


def line_metric_total(caplog: Any, name: str, **dimensions: str) -> float:
    """What the functions' log-group metric filters (pipeline/metric_filters.py) count from the
    handler's lines, as CloudWatch Logs would, with these dimensions (others ignored)."""
    from local_aws.log_filters import MetricFilter, counts
    from pipeline import metric_filters

    filters = [MetricFilter.of(m, "tests") for m in (*metric_filters.CONSUMER, *metric_filters.DOOR)]
    # A line's `service` is the Powertools logger's name: the field its formatter writes
    lines = [{**line, "service": record.name} for line, record in zip(log_lines(caplog), caplog.records, strict=True)]
    return sum(
        1
        for metric, found in counts(filters, lines)
        if metric == name and all(found.get(k) == v for k, v in dimensions.items())
    )
