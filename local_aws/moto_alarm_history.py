"""CloudWatch's DescribeAlarmHistory, which moto does not implement: the local runtime evaluates
alarms and runs their actions itself (alarms.py), and writes each state change and each action,
succeeded or failed, into the alarm it created in moto, so any process reaching the emulator
(`aws cloudwatch describe-alarm-history`, lanectl) reads what happened, as on AWS."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from local_aws.deploy import ACCOUNT, REGION

_ITEMS = "_lanes_history"
_PATCHED = False


def _alarm(name: str) -> Any:
    from moto.cloudwatch.models import cloudwatch_backends

    return cloudwatch_backends[ACCOUNT][REGION].alarms.get(name)


def _record(name: str, at: float, kind: str, summary: str, data: dict[str, Any]) -> None:
    alarm = _alarm(name)
    if alarm is None:
        return
    alarm.__dict__.setdefault(_ITEMS, []).append(
        {
            "AlarmName": name,
            "AlarmType": "MetricAlarm",
            "Timestamp": datetime.fromtimestamp(at, UTC),
            "HistoryItemType": kind,
            "HistorySummary": summary[:255],
            "HistoryData": json.dumps(data),
        }
    )


def record_state(name: str, at: float, previous: str, state: str, reason: str) -> None:
    _record(
        name,
        at,
        "StateUpdate",
        f"Alarm updated from {previous} to {state}",
        {"oldState": {"stateValue": previous}, "newState": {"stateValue": state, "stateReason": reason}},
    )


def record_action(name: str, at: float, summary: str, data: dict[str, Any]) -> None:
    _record(name, at, "Action", summary, data)


def install() -> None:
    global _PATCHED
    if _PATCHED:
        return
    from moto.cloudwatch.responses import CloudWatchResponse
    from moto.core.responses import ActionResult

    def describe_alarm_history(self: Any) -> Any:
        name = self._get_param("AlarmName")
        kind = self._get_param("HistoryItemType")
        backend = self.cloudwatch_backend
        alarms = [backend.alarms[name]] if name in backend.alarms else ([] if name else list(backend.alarms.values()))
        items = [item for alarm in alarms for item in alarm.__dict__.get(_ITEMS, ())]
        if kind:
            items = [item for item in items if item["HistoryItemType"] == kind]
        items.sort(key=lambda item: item["Timestamp"], reverse=self._get_param("ScanBy") != "TimestampAscending")
        return ActionResult({"AlarmHistoryItems": items[: int(self._get_param("MaxRecords") or 100)]})

    CloudWatchResponse.describe_alarm_history = describe_alarm_history  # type: ignore[attr-defined]
    _PATCHED = True
