"""Logs and metrics for one API request (the webhook door, the jobs API, the erasure callback):
the doors' `Telemetry` port (domain/ports.py).

The correlation id (the delivery's log id, or the job id) and the request's other context travel
in each log call's `extra` fields, never in the logger's appended keys: those are shared by every
thread using the logger, and the local runtime runs several instances in one process.

Each count is flushed as its own EMF line, because EMF puts one dimension set on all the metrics
of a line and these counts have different dimensions (lane, reason, none).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from aws_lambda_powertools import Logger
from aws_lambda_powertools.metrics import EphemeralMetrics, MetricUnit

_CALLER = 3
"""Log `location` names the line that logged (in the door's rules), not this wrapper."""


class RequestTelemetry:
    def __init__(self, logger: Logger, metrics: EphemeralMetrics, **fields: Any) -> None:
        self._logger = logger
        self._metrics = metrics
        self._fields = {name: value for name, value in fields.items() if value is not None}

    def bind(self, **fields: Any) -> RequestTelemetry:
        """The same request with more context (for example its correlation id once known)."""
        return RequestTelemetry(self._logger, self._metrics, **{**self._fields, **fields})

    def _extra(self, fields: dict[str, Any]) -> dict[str, Any]:
        return {**self._fields, **{name: value for name, value in fields.items() if value is not None}}

    def info(self, message: str, **fields: Any) -> None:
        self._logger.info(message, extra=self._extra(fields), stacklevel=_CALLER)

    def warning(self, message: str, **fields: Any) -> None:
        self._logger.warning(message, extra=self._extra(fields), stacklevel=_CALLER)

    def error(self, message: str, **fields: Any) -> None:
        self._logger.error(message, extra=self._extra(fields), stacklevel=_CALLER)

    def critical(self, message: str, **fields: Any) -> None:
        self._logger.critical(message, extra=self._extra(fields), stacklevel=_CALLER)

    def exception(self, message: str, **fields: Any) -> None:
        self._logger.exception(message, extra=self._extra(fields), stacklevel=_CALLER)

    def count(self, name: str, /, **dimensions: str) -> None:
        self.count_also_by(name, {}, **dimensions)

    def count_also_by(self, name: str, also_by: Mapping[str, str], /, **dimensions: str) -> None:
        """One count by `dimensions`, published by the second set `also_by` too (with `service`,
        as alarms expect) from the same line, so an alarm can watch a group of reasons as one
        series without a second log line per request."""
        for dimension, value in dimensions.items():
            self._metrics.add_dimension(name=dimension, value=str(value))
        if also_by:
            service = getattr(self._metrics, "service", None)
            self._metrics.add_dimensions(**({"service": service} if service else {}), **also_by)
        self._metrics.add_metric(name=name, unit=MetricUnit.Count, value=1)
        self._metrics.flush_metrics()
