"""Structured logs and CloudWatch metrics (embedded metric format) for one handler instance.

Metrics are per instance (`EphemeralMetrics`), never the shared class-level buffer, so several
functions in one process (the local runtime) cannot mix their metrics. Per-record context goes in
`extra` fields of each log call, never in appended logger keys, for the same reason.
Tenant ids are log fields only: a metric dimension per tenant would cost a metric each.
"""

from __future__ import annotations

from collections.abc import Mapping

from aws_lambda_powertools import Logger
from aws_lambda_powertools.metrics import EphemeralMetrics, MetricUnit

from pipeline.adapters.log_lines import LogLineFormatter
from pipeline.settings import EnvVar

DEFAULT_NAMESPACE = "Lanes"


def logger_for(environ: Mapping[str, str], default_service: str) -> Logger:
    service = environ.get(EnvVar.SERVICE_NAME) or default_service
    logger = Logger(service=service, level=environ.get("LOG_LEVEL", "INFO"), logger_formatter=LogLineFormatter())
    # The handler line that logged says nothing the message does not, and CloudWatch Logs stamps
    # every event it ingests with its time: every line paid for both.
    logger.remove_keys(["location", "timestamp"])
    return logger


def metrics_for(environ: Mapping[str, str], default_service: str) -> EphemeralMetrics:
    return EphemeralMetrics(
        namespace=environ.get(EnvVar.METRICS_NAMESPACE) or DEFAULT_NAMESPACE,
        service=environ.get(EnvVar.SERVICE_NAME) or default_service,
    )


__all__ = ["DEFAULT_NAMESPACE", "MetricUnit", "logger_for", "metrics_for"]
