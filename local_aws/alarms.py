"""CloudWatch's alarm evaluation, for the alarms in the template.

moto stores alarms but never evaluates them. Each template alarm is created in moto (so other
processes can describe it), evaluated here every second over the runtime's metrics, and on a state
change its state is set in moto and its actions (the on-call topic) are notified through SNS.

Differences from CloudWatch, on purpose: periods are sliding windows ending now rather than
aligned, completed periods, so a local alarm reacts within a second; and an alarm is first
evaluated one period after the runtime starts, as a new alarm waits for its first period.

An action runs as CloudWatch runs it: as the `cloudwatch.amazonaws.com` service principal, for
this alarm's ARN, under the topic's policy and its key's (local_aws/iam/played.py). A refused
action notifies nobody; the alarm's history says so (`DescribeAlarmHistory`, item type Action), as
it does on AWS. A state's actions run on every change into it, the first evaluation's included
(INSUFFICIENT_DATA to OK runs the OK actions), and none at creation, as on AWS.

EventBridge rules on an alarm's state changes (`AlarmRule`, the template's rules whose source is
`aws.cloudwatch`) are played here too: on a change their pattern matches, each target topic is
published to as `events.amazonaws.com`, for the rule's ARN, under the same policies.
"""

from __future__ import annotations

import json
import operator
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from local_aws import moto_alarm_history as alarm_history
from local_aws.deploy import ACCOUNT, REGION
from local_aws.metrics import MetricsStore

OK, ALARM, INSUFFICIENT = "OK", "ALARM", "INSUFFICIENT_DATA"
_COMPARE: dict[str, Callable[[float, float], bool]] = {
    "GreaterThanThreshold": operator.gt,
    "GreaterThanOrEqualToThreshold": operator.ge,
    "LessThanThreshold": operator.lt,
    "LessThanOrEqualToThreshold": operator.le,
}


@dataclass(frozen=True)
class ActionRun:
    at: float
    target: str
    state: str
    """The state whose action this was."""
    error: str | None
    """CloudWatch's reason for a failed action; None when it ran."""

    @property
    def summary(self) -> str:
        if self.error is None:
            return f"Successfully executed action {self.target}"
        return f'Failed to execute action {self.target}. Received error: "{self.error}"'


@dataclass(frozen=True)
class AlarmRule:
    """An EventBridge rule on one alarm's state changes: its ARN, the pattern's `detail` and its
    targets (topics)."""

    arn: str
    detail: dict[str, Any]
    targets: list[str]

    def matches(self, previous: str, state: str) -> bool:
        def allowed(key: str, value: str) -> bool:
            values = self.detail.get(key, {}).get("value")
            return values is None or value in values

        return allowed("previousState", previous) and allowed("state", state)


@dataclass
class AlarmDefinition:
    logical_id: str
    name: str
    namespace: str
    metric_name: str
    dimensions: dict[str, str]
    statistic: str
    period: float
    evaluation_periods: int
    datapoints_to_alarm: int
    threshold: float
    comparison: str
    treat_missing: str
    description: str
    alarm_actions: list[str]
    ok_actions: list[str]
    insufficient_data_actions: list[str] = field(default_factory=list)
    rules: list[AlarmRule] = field(default_factory=list)
    """EventBridge rules on this alarm's state changes (wiring.alarm_definitions)."""
    state: str = INSUFFICIENT
    reason: str = "the alarm has not been evaluated yet"
    history: list[tuple[float, str, str, str]] = field(default_factory=list)
    """State changes: (time, previous state, new state, reason)."""
    actions: list[ActionRun] = field(default_factory=list)

    @classmethod
    def from_template(cls, logical_id: str, properties: dict[str, Any], stack_name: str) -> AlarmDefinition:
        """`properties` already resolved to physical names."""
        if "Metrics" in properties:
            raise ValueError(f"{logical_id}: metric-math alarms are not evaluated by the local runtime")
        periods = int(properties["EvaluationPeriods"])
        return cls(
            logical_id=logical_id,
            name=properties.get("AlarmName") or f"{stack_name}-{logical_id}",
            namespace=properties["Namespace"],
            metric_name=properties["MetricName"],
            dimensions={d["Name"]: str(d["Value"]) for d in properties.get("Dimensions", [])},
            statistic=properties.get("Statistic") or properties.get("ExtendedStatistic", "Average"),
            period=float(properties["Period"]),
            evaluation_periods=periods,
            datapoints_to_alarm=int(properties.get("DatapointsToAlarm", periods)),
            threshold=float(properties["Threshold"]),
            comparison=properties["ComparisonOperator"],
            treat_missing=properties.get("TreatMissingData", "missing"),
            description=properties.get("AlarmDescription", ""),
            alarm_actions=list(properties.get("AlarmActions", [])),
            ok_actions=list(properties.get("OKActions", [])),
            insufficient_data_actions=list(properties.get("InsufficientDataActions", [])),
        )

    def evaluate(self, store: MetricsStore, now: float) -> tuple[str, str]:
        breaches = evaluated = missing = 0
        latest: float | None = None
        for index in range(self.evaluation_periods):
            end = now - index * self.period
            value = store.statistic(
                self.namespace, self.metric_name, self.dimensions, self.statistic, end - self.period, end
            )
            if value is None:
                missing += 1
                if self.treat_missing == "breaching":
                    breaches += 1
                    evaluated += 1
                elif self.treat_missing == "notBreaching":
                    evaluated += 1
                continue
            latest = value if latest is None else latest
            evaluated += 1
            if _COMPARE[self.comparison](value, self.threshold):
                breaches += 1
        if evaluated == 0:
            if self.treat_missing == "ignore":
                return self.state, self.reason
            return INSUFFICIENT, f"no datapoints in the last {self.evaluation_periods} period(s) of {self.period:g} s"
        shown = "missing" if latest is None else f"{latest:g}"
        reason = (
            f"{breaches} of {self.evaluation_periods} period(s) breaching {self.comparison} {self.threshold:g} "
            f"(latest {self.statistic} {shown}, {missing} missing)"
        )
        return (ALARM if breaches >= self.datapoints_to_alarm else OK), reason


class AlarmEvaluator:
    def __init__(
        self,
        alarms: list[AlarmDefinition],
        store: MetricsStore,
        *,
        cloudwatch: Any,
        sns: Any,
        on_change: Callable[[AlarmDefinition, str], None],
        refusal: Callable[[str, str], str | None] = lambda alarm_arn, topic: None,
        rule_refusal: Callable[[str, str], str | None] = lambda rule_arn, topic: None,
        on_action: Callable[[AlarmDefinition, ActionRun], None] = lambda alarm, run: None,
        deliver: Callable[[str, str, str], object] = lambda topic, subject, message: None,
    ) -> None:
        """`refusal(alarm ARN, topic ARN)` says why CloudWatch may not publish there, or None;
        `rule_refusal(rule ARN, topic ARN)` says the same of EventBridge for a rule;
        `on_action` hears of every action run, refused or not; `deliver(topic, subject, message)`
        is SNS handing a publish to the topic's subscribers (the local on-call inbox)."""
        self._refusal = refusal
        self._rule_refusal = rule_refusal
        self._on_action = on_action
        self._deliver = deliver
        self.alarms = alarms
        self._store = store
        self._cloudwatch = cloudwatch
        self._sns = sns
        self._on_change = on_change
        self._started = time.time()

    def create_in_moto(self) -> None:
        for alarm in self.alarms:
            self._cloudwatch.put_metric_alarm(
                AlarmName=alarm.name,
                AlarmDescription=alarm.description[:1024],
                Namespace=alarm.namespace,
                MetricName=alarm.metric_name,
                Dimensions=[{"Name": k, "Value": v} for k, v in alarm.dimensions.items()],
                Statistic=alarm.statistic,
                Period=int(alarm.period),
                EvaluationPeriods=alarm.evaluation_periods,
                Threshold=alarm.threshold,
                ComparisonOperator=alarm.comparison,
                TreatMissingData=alarm.treat_missing,
                AlarmActions=alarm.alarm_actions,
                OKActions=alarm.ok_actions,
                InsufficientDataActions=alarm.insufficient_data_actions,
            )

    def evaluate_all(self) -> None:
        now = time.time()
        for alarm in self.alarms:
            if now - self._started < alarm.period:
                continue
            state, reason = alarm.evaluate(self._store, now)
            if state != alarm.state:
                previous = alarm.state
                alarm.state, alarm.reason = state, reason
                alarm.history.append((now, previous, state, reason))
                self._notify(alarm, previous)
                self._on_change(alarm, previous)

    def _notify(self, alarm: AlarmDefinition, previous: str) -> None:
        self._cloudwatch.set_alarm_state(AlarmName=alarm.name, StateValue=alarm.state, StateReason=alarm.reason[:1023])
        alarm_history.record_state(alarm.name, time.time(), previous, alarm.state, alarm.reason)
        actions = {ALARM: alarm.alarm_actions, OK: alarm.ok_actions, INSUFFICIENT: alarm.insufficient_data_actions}[
            alarm.state
        ]
        message = json.dumps(
            {
                "AlarmName": alarm.name,
                "AlarmDescription": alarm.description,
                "NewStateValue": alarm.state,
                "OldStateValue": previous,
                "NewStateReason": alarm.reason,
                "StateChangeTime": datetime.now(UTC).isoformat(),
            }
        )
        for topic in actions:
            error = self._refusal(alarm_arn(alarm.name), topic)
            if error is None:
                subject = f"{alarm.state}: {alarm.name}"[:99]
                self._sns.publish(TopicArn=topic, Subject=subject, Message=message)
                self._deliver(topic, subject, message)
            run = ActionRun(at=time.time(), target=topic, state=alarm.state, error=error)
            alarm.actions.append(run)
            alarm_history.record_action(
                alarm.name, run.at, run.summary, {"actionState": "Failed" if error else "Succeeded"}
            )
            self._on_action(alarm, run)
        for rule in alarm.rules:
            if rule.matches(previous, alarm.state):
                for topic in rule.targets:
                    self._publish_for_rule(alarm, rule, topic, message)

    def _publish_for_rule(self, alarm: AlarmDefinition, rule: AlarmRule, topic: str, message: str) -> None:
        """EventBridge delivering the alarm's state change to a target topic. The rule's target
        takes the event as it is; what SNS hands subscribers is, like an action's page, the
        alarm's name and states."""
        error = self._rule_refusal(rule.arn, topic)
        if error is not None:
            # A refused delivery is the rule's failed invocation; kept beside the alarm's actions so
            # the runtime says why nobody heard of the recovery.
            run = ActionRun(at=time.time(), target=topic, state=alarm.state, error=error)
            alarm.actions.append(run)
            self._on_action(alarm, run)
            return
        subject = f"{alarm.state}: {alarm.name}"[:99]
        self._sns.publish(TopicArn=topic, Subject=subject, Message=message)
        self._deliver(topic, subject, message)


def alarm_arn(name: str) -> str:
    return f"arn:aws:cloudwatch:{REGION}:{ACCOUNT}:alarm:{name}"
