"""What the three HTTP handlers (ingress, jobs, erasure) share: event in, the door's rules, answer
out, with the one 500 fallback; and the Lambda entry point that builds an instance's handler once.

A door's rules answer every request they understand and raise for the rest: `http.Failed` for a
dependency they have already logged, a dependency error they let through (listed in the door's
`Failures`, logged here with its traceback), or anything else, which is a bug. Each is answered
500, so the caller (Meta, a producer) retries, and counted by its reason.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from aws_lambda_powertools import Logger
from aws_lambda_powertools.metrics import EphemeralMetrics

from pipeline import metric_names
from pipeline.adapters.api_telemetry import RequestTelemetry
from pipeline.domain import http
from pipeline.domain.http import HttpRequest, Reply

Handler = Callable[[Mapping[str, Any], Any], dict[str, Any]]
Rules = Callable[[HttpRequest, RequestTelemetry], Reply]
"""One request's answer from a door's rules, told what to log and count through."""


@dataclass(frozen=True)
class Failures:
    """How one door counts its 500s."""

    metric: str
    internal: str
    """The reason counted for a bug."""
    log_message: str
    """The log line for a bug."""
    known: Mapping[type[Exception], tuple[str, str]] = field(default_factory=dict)
    """Dependency errors the rules let through: the reason counted, and the log line."""

    def known_failure(self, exc: Exception) -> tuple[str, str]:
        return next(found for kind, found in self.known.items() if isinstance(exc, kind))


def http_handler(rules: Rules, logger: Logger, metrics: EphemeralMetrics, failures: Failures) -> Handler:
    known = tuple(failures.known)

    def handle(event: Mapping[str, Any], context: Any) -> dict[str, Any]:
        request = HttpRequest.from_event(event)
        telemetry = RequestTelemetry(
            logger, metrics, request_id=getattr(context, "aws_request_id", None) or request.request_id
        )
        try:
            return rules(request, telemetry).to_event()
        except http.Failed as exc:
            reason = exc.reason  # logged where it was raised
        except known as exc:
            reason, message = failures.known_failure(exc)
            telemetry.exception(message)
        except Exception:
            # A bug, not a dependency. Nothing a door writes is lost by a 500: the caller retries,
            # and a row written before the failure is found by the retry (or by the sweeper).
            telemetry.exception(failures.log_message)
            reason = failures.internal
        telemetry.count(failures.metric, **{metric_names.REASON: reason})
        return http.error(500, "internal error").to_event()

    return handle


def entry_point(create_handler: Callable[[Mapping[str, str]], Handler]) -> Handler:
    """The function Lambda calls: it builds the instance's handler from `os.environ` on the first
    event, so nothing reads the environment or makes a client at import time."""

    @functools.cache
    def built() -> Handler:
        return create_handler(os.environ)

    def handler(event: Mapping[str, Any], context: Any) -> dict[str, Any]:
        return built()(event, context)

    return handler
