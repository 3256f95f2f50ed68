"""EventBridge's part: fire each scheduled rule at its period and deliver to its targets.

The period is the rule's `lanes:periodSeconds` metadata when present (EventBridge's smallest rate
is a minute; the local environment's clock runs in seconds), else its rate expression. Lambda
targets are invoked asynchronously with the target's retry policy; SQS targets receive the event
through the rule's input transformer, exactly as written in the template.
"""

from __future__ import annotations

import json
import re
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from local_aws.deploy import ACCOUNT, REGION
from stacks.runtime_env import PERIOD_METADATA

_RATE = re.compile(r"rate\((\d+)\s+(minute|minutes|hour|hours|day|days)\)")
_UNIT_SECONDS = {"minute": 60, "hour": 3600, "day": 86400}
_PLACEHOLDER = re.compile(r"<([A-Za-z0-9_.$-]+)>")


def period_seconds(rule: dict[str, Any]) -> float:
    metadata = rule.get("Metadata", {})
    if PERIOD_METADATA in metadata:
        return float(metadata[PERIOD_METADATA])
    expression = rule["Properties"].get("ScheduleExpression", "")
    match = _RATE.fullmatch(expression.strip())
    if not match:
        raise ValueError(f"the local runtime runs rate() schedules only, not {expression!r}")
    return int(match.group(1)) * _UNIT_SECONDS[match.group(2).rstrip("s")]


def scheduled_event(rule_arn: str, now: datetime) -> dict[str, Any]:
    return {
        "version": "0",
        "id": str(uuid.uuid4()),
        "detail-type": "Scheduled Event",
        "source": "aws.events",
        "account": ACCOUNT,
        "time": now.strftime("%Y-%m-%dT%H:%M:%SZ"),
        "region": REGION,
        "resources": [rule_arn],
        "detail": {},
    }


def _path(event: dict[str, Any], path: str) -> Any:
    value: Any = event
    for part in path.removeprefix("$.").split("."):
        value = value.get(part) if isinstance(value, dict) else None
    return value


def transform(transformer: dict[str, Any], event: dict[str, Any]) -> str:
    """Render an input transformer: a placeholder inside a JSON string is replaced by the raw
    text, one outside by the value as JSON, as EventBridge does."""
    values = {name: _path(event, path) for name, path in transformer.get("InputPathsMap", {}).items()}
    template = transformer["InputTemplate"]
    out: list[str] = []
    in_string = False
    position = 0
    while position < len(template):
        match = _PLACEHOLDER.match(template, position)
        if match and match.group(1) in values:
            value = values[match.group(1)]
            out.append(str(value) if in_string else json.dumps(value))
            position = match.end()
            continue
        char = template[position]
        if char == '"' and (position == 0 or template[position - 1] != "\\"):
            in_string = not in_string
        out.append(char)
        position += 1
    return "".join(out)


@dataclass
class ScheduledRule:
    logical_id: str
    arn: str
    period: float
    targets: list[dict[str, Any]]
    fired: int = 0


class Scheduler:
    def __init__(
        self,
        rules: list[ScheduledRule],
        *,
        invoke_async: Callable[[str, dict[str, Any], int], None],
        send_to_queue: Callable[[str, str], None],
        on_error: Callable[[str], None],
        refusal: Callable[[str, str, str], str | None] = lambda action, target, rule: None,
    ) -> None:
        """`refusal(action, target ARN, rule ARN)` says why EventBridge may not deliver to a
        target (its queue policy or the function's permissions do not let the rule in), or None."""
        self.rules = rules
        self._invoke_async = invoke_async
        self._send = send_to_queue
        self._refusal = refusal
        self._on_error = on_error
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="scheduler", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self, timeout: float = 5.0) -> None:
        self._stop.set()
        self._thread.join(timeout=max(0.0, timeout))

    def _loop(self) -> None:
        started = time.monotonic()
        due = {rule.logical_id: started + rule.period for rule in self.rules}
        while not self._stop.is_set():
            now = time.monotonic()
            for rule in self.rules:
                if now >= due[rule.logical_id]:
                    due[rule.logical_id] += rule.period
                    self._fire(rule)
            next_due = min(due.values(), default=now + 1)
            self._stop.wait(max(0.05, min(1.0, next_due - time.monotonic())))

    def _fire(self, rule: ScheduledRule) -> None:
        rule.fired += 1
        event = scheduled_event(rule.arn, datetime.now(UTC))
        for target in rule.targets:
            try:
                arn = target["Arn"]
                action = "lambda:InvokeFunction" if arn.startswith("arn:aws:lambda:") else "sqs:SendMessage"
                refused = self._refusal(action, arn, rule.arn)
                if refused is not None:
                    # EventBridge counts a FailedInvocation and drops the event: nothing reaches the target.
                    self._on_error(f"rule {rule.logical_id}: EventBridge may not deliver to {arn}: {refused}")
                    continue
                if arn.startswith("arn:aws:lambda:"):
                    retries = int((target.get("RetryPolicy") or {}).get("MaximumRetryAttempts", 185))
                    self._invoke_async(arn, event, retries)
                elif arn.startswith("arn:aws:sqs:"):
                    body = (
                        transform(target["InputTransformer"], event)
                        if "InputTransformer" in target
                        else json.dumps(event)
                    )
                    self._send(arn, body)
                else:
                    self._on_error(f"rule {rule.logical_id}: target {arn} is not supported locally")
            except Exception as exc:
                self._on_error(f"rule {rule.logical_id}: {type(exc).__name__}: {exc}")
