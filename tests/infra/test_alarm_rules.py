"""Every alarm in the template, held to the rule of the family it belongs to: what it notifies
(`Notice`, stacks/constructs/alarms.py), and a threshold, period and missing-data rule that follow
from what it watches. An alarm no family claims fails here: a new alarm is given its rule."""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest

from local_aws.alarms import ALARM, INSUFFICIENT, OK, AlarmDefinition
from local_aws.metrics import MetricsStore
from pipeline import metric_names
from stacks.constructs.alarms import RECOVERY_EVENT
from stacks.constructs.function_alarms import DURATION_SHARE
from stacks.constructs.lane_probe import probe_alarm_period
from stacks.constructs.schedules import SILENT_PERIODS, recovery_seconds, sweep_alarm_period

pytestmark = pytest.mark.xdist_group("synth")

Alarm = dict[str, Any]


@dataclass(frozen=True)
class Family:
    notice: str
    """event, condition or silence."""
    check: Callable[[Any, Alarm], None]
    """Asserts the family's threshold, period and missing-data rule on one alarm's properties."""


def _count_of_what_happened(synthesized, alarm: Alarm) -> None:
    """A count emitted only when it happens: the first one pages, a period without one is fine."""
    assert alarm["Statistic"] == "Sum"
    assert alarm["EvaluationPeriods"] == 1
    assert alarm["TreatMissingData"] == "notBreaching"
    # ">= n" with n >= 1, or "> 0": one occurrence is enough
    operator, threshold = alarm["ComparisonOperator"], alarm["Threshold"]
    assert (operator == "GreaterThanOrEqualToThreshold" and threshold >= 1) or (
        operator == "GreaterThanThreshold" and threshold == 0
    )


def _depth_of_kept_messages(synthesized, alarm: Alarm) -> None:
    """A queue that keeps what failed (a DLQ, undelivered pages): one message pages; SQS stops
    publishing an idle queue's metrics, which is an empty queue."""
    assert (alarm["Statistic"], alarm["ComparisonOperator"], alarm["Threshold"]) == (
        "Maximum",
        "GreaterThanOrEqualToThreshold",
        1,
    )
    assert alarm["EvaluationPeriods"] == 1
    assert alarm["TreatMissingData"] == "notBreaching"


def _lane_age(synthesized, alarm: Alarm) -> None:
    """A lane's oldest message against the lane's objective, sustained over the environment's periods."""
    objectives = {lane.policy.objective_seconds for lane in synthesized.env.lanes}
    assert alarm["Threshold"] in objectives
    assert (alarm["Statistic"], alarm["ComparisonOperator"]) == ("Maximum", "GreaterThanThreshold")
    assert alarm["EvaluationPeriods"] == synthesized.env.alarms.evaluation_periods
    assert alarm["TreatMissingData"] == "notBreaching"


def _sustained_count(threshold: Callable[[Any], float]) -> Callable[[Any, Alarm], None]:
    def check(synthesized, alarm: Alarm) -> None:
        assert alarm["Statistic"] == "Sum"
        assert (alarm["ComparisonOperator"], alarm["Threshold"]) == (
            "GreaterThanOrEqualToThreshold",
            threshold(synthesized.env),
        )
        assert alarm["EvaluationPeriods"] in (1, synthesized.env.alarms.evaluation_periods)
        assert alarm["TreatMissingData"] == "notBreaching"

    return check


def _probe_span(synthesized, alarm: Alarm) -> None:
    """The probe reports once a run, on a schedule EventBridge may deliver late: a period without
    a report is not breaching, and must not reset the span either, so most periods, not all, page."""
    env = synthesized.env
    period = probe_alarm_period(env)
    periods = math.ceil(env.probe.failing_alarm_seconds / period)
    assert alarm["Period"] == period >= env.probe.period_seconds
    assert (alarm["Statistic"], alarm["ComparisonOperator"], alarm["Threshold"]) == (
        "Sum",
        "GreaterThanOrEqualToThreshold",
        1,
    )
    assert alarm["EvaluationPeriods"] == periods
    assert alarm["TreatMissingData"] == "notBreaching"
    needed = alarm.get("DatapointsToAlarm", periods)
    if periods >= 5:  # one period in five may be empty without resetting the span
        assert needed <= periods - periods // 5
    assert needed * period >= 0.75 * env.probe.failing_alarm_seconds


def _unprocessed_age(synthesized, alarm: Alarm) -> None:
    """What the sweeper reports: never below what it takes to recover a lost row as designed
    (grace, then the next sweep), and a period without a report keeps the alarm's state."""
    recovery = recovery_seconds(synthesized.env)
    assert alarm["Threshold"] > recovery
    lane = {d["Name"]: d["Value"] for d in alarm["Dimensions"]}.get(metric_names.LANE)
    if lane is not None:
        (objective,) = [x.policy.objective_seconds for x in synthesized.env.lanes if x.name == lane]
        assert alarm["Threshold"] == objective + recovery
    assert alarm["Period"] == sweep_alarm_period(synthesized.env)
    assert alarm["TreatMissingData"] == "ignore"


def _quiet_accounts(synthesized, alarm: Alarm) -> None:
    assert (alarm["Statistic"], alarm["ComparisonOperator"], alarm["Threshold"]) == (
        "Maximum",
        "GreaterThanOrEqualToThreshold",
        1,
    )
    assert alarm["TreatMissingData"] == "ignore"


def _sweeper_silent(synthesized, alarm: Alarm) -> None:
    """A period with a report is OK whatever it says; none for SILENT_PERIODS leaves no data."""
    assert (alarm["Statistic"], alarm["ComparisonOperator"], alarm["Threshold"]) == (
        "SampleCount",
        "LessThanThreshold",
        1,
    )
    assert alarm["EvaluationPeriods"] == SILENT_PERIODS
    assert alarm["Period"] >= synthesized.env.sweeper.period_seconds
    assert alarm["TreatMissingData"] == "missing"


def _webhooks_quiet(synthesized, alarm: Alarm) -> None:
    assert (alarm["Statistic"], alarm["ComparisonOperator"], alarm["Threshold"]) == ("Sum", "LessThanThreshold", 1)
    assert alarm["EvaluationPeriods"] * alarm["Period"] == synthesized.env.alarms.webhooks_quiet_seconds
    assert alarm["TreatMissingData"] == "missing"


def _near_timeout(synthesized, alarm: Alarm) -> None:
    """A door's slowest run in a period against its own function's timeout: past DURATION_SHARE
    of it, one run pages (the next slower call times out); no run is no data, not a breach."""
    (dimension,) = alarm["Dimensions"]
    function = synthesized.resources("AWS::Lambda::Function")[dimension["Value"]["Ref"]]
    timeout_ms = function["Properties"]["Timeout"] * 1000
    assert (alarm["Statistic"], alarm["ComparisonOperator"]) == ("Maximum", "GreaterThanOrEqualToThreshold")
    assert alarm["Threshold"] == round(timeout_ms * DURATION_SHARE) < timeout_ms
    assert alarm["EvaluationPeriods"] == 1
    assert alarm["TreatMissingData"] == "notBreaching"


EVENT_COUNTS = frozenset(
    {
        metric_names.REPLIES_UNANSWERED,
        metric_names.OUT_OF_TIME,
        metric_names.LANE_PAUSED,
        metric_names.EXPIRED_UNPROCESSED,
        metric_names.ABANDONED,
        metric_names.WEBHOOK_FAILED,
        metric_names.JOB_FAILED,
        metric_names.ERASURE_FAILED,
        metric_names.WEBHOOK_UNPARSEABLE,
    }
)
FAMILIES: dict[tuple[str, str | None], Family] = {
    ("AWS/SQS", "ApproximateNumberOfMessagesVisible"): Family("event", _depth_of_kept_messages),
    ("AWS/SQS", "ApproximateAgeOfOldestMessage"): Family("condition", _lane_age),
    ("AWS/SQS", "ApproximateAgeOfOldestMessageInQuietGroups"): Family("condition", _lane_age),
    ("AWS/Lambda", "Throttles"): Family("event", _count_of_what_happened),
    ("AWS/Lambda", "Errors"): Family("condition", _sustained_count(lambda env: env.alarms.errors_threshold)),
    ("AWS/Lambda", "ProbeErrors"): Family("condition", _probe_span),
    ("AWS/Lambda", "DoorErrors"): Family("event", _count_of_what_happened),
    ("AWS/Lambda", "Duration"): Family("event", _near_timeout),
    ("AWS/ApiGateway", "5xx"): Family("event", _count_of_what_happened),
    ("AWS/Lambda", "Url5xxCount"): Family("event", _count_of_what_happened),
    ("", metric_names.REPLIES_FAILED): Family(
        "condition", _sustained_count(lambda env: env.alarms.replies_failed_per_period)
    ),
    ("", metric_names.PROBE_FAILED): Family("condition", _probe_span),
    ("", metric_names.OLDEST_UNPROCESSED_AGE): Family("condition", _unprocessed_age),
    ("", "SweeperReports"): Family("silence", _sweeper_silent),
    ("", metric_names.QUIET_ACCOUNTS): Family("condition", _quiet_accounts),
    ("", metric_names.JOB_SHED): Family("condition", _sustained_count(lambda env: env.alarms.jobs_shed_threshold)),
    ("", metric_names.WEBHOOK_REJECTED): Family(
        "condition", _sustained_count(lambda env: env.alarms.rejected_signatures)
    ),
    ("", metric_names.WEBHOOK_ENQUEUED_TOTAL): Family("silence", _webhooks_quiet),
    **{("", name): Family("event", _count_of_what_happened) for name in EVENT_COUNTS},
}
"""By (namespace, metric): AWS's namespaces as they are, the stack's own as ""; the probe's and
the HTTP doors' errors and the sweeper's report count are told apart from their metric's other
alarms."""
DOOR_FUNCTIONS = tuple(f"[{{'Name': 'FunctionName', 'Value': {{'Ref': '{door}" for door in ("Ingress", "Erasure"))
"""An alarm's dimensions on a function of the HTTP doors (the webhook, the jobs API, the data
deletion callback), whose every error pages (stacks/constructs/function_alarms.py)."""


def family_of(alarm: Alarm) -> Family | None:
    namespace, name = alarm.get("Namespace", ""), alarm.get("MetricName")
    if not namespace.startswith("AWS/"):
        namespace = ""
    if name == "Errors" and "LaneProbe" in str(alarm.get("Dimensions")):
        name = "ProbeErrors"
    if name == "Errors" and str(alarm.get("Dimensions")).startswith(DOOR_FUNCTIONS):
        name = "DoorErrors"
    if name == metric_names.OLDEST_UNPROCESSED_AGE and alarm.get("Statistic") == "SampleCount":
        name = "SweeperReports"
    return FAMILIES.get((namespace, name))


def _alarms(synthesized) -> dict[str, Alarm]:
    return {i: r["Properties"] for i, r in synthesized.resources("AWS::CloudWatch::Alarm").items()}


def _recoveries(synthesized) -> dict[str, dict]:
    """Alarm logical id to the rule that carries its return to OK."""
    found = {}
    for rule in synthesized.resources("AWS::Events::Rule").values():
        pattern = rule["Properties"].get("EventPattern", {})
        if pattern.get("source") != ["aws.cloudwatch"]:
            continue
        (watched,) = pattern["resources"]
        found[watched["Fn::GetAtt"][0]] = rule["Properties"]
    return found


def test_every_alarm_follows_the_rule_of_what_it_watches(synthesized):
    # Given every alarm in the template
    alarms = _alarms(synthesized)
    assert alarms
    unclaimed = sorted(i for i, a in alarms.items() if family_of(a) is None)
    assert not unclaimed, f"{unclaimed}: give each a family, with its rule, in tests/infra/test_alarm_rules.py"
    for logical_id, alarm in alarms.items():
        family = family_of(alarm)
        assert family is not None
        try:
            family.check(synthesized, alarm)
        except AssertionError as failed:
            raise AssertionError(f"{logical_id} breaks its family's rule ({family.check.__name__}): {failed}") from None


def test_alarms_page_on_what_needs_a_person_and_recoveries_only_where_they_must_be_known(synthesized):
    (topic_id,) = synthesized.resources("AWS::SNS::Topic")
    topic = {"Ref": topic_id}
    recoveries = _recoveries(synthesized)
    for logical_id, alarm in _alarms(synthesized).items():
        family = family_of(alarm)
        assert family is not None
        # No alarm has an OK action: CloudWatch runs it on the first evaluation after creation too
        assert "OKActions" not in alarm, logical_id
        if family.notice == "silence":
            # An absence pages by INSUFFICIENT_DATA, the state a never-seen signal is created in
            assert (alarm.get("AlarmActions"), alarm["InsufficientDataActions"]) == (None, [topic]), logical_id
        else:
            assert (alarm["AlarmActions"], alarm.get("InsufficientDataActions")) == ([topic], None), logical_id
        if family.notice == "condition":
            # Its end is news, and only its end: the change from ALARM to OK, to the same topic
            rule = recoveries.pop(logical_id)
            assert rule["EventPattern"]["detail-type"] == ["CloudWatch Alarm State Change"]
            assert rule["EventPattern"]["detail"] == RECOVERY_EVENT
            assert [t["Arn"] for t in rule["Targets"]] == [topic]
    # And no other alarm's OK is sent
    assert recoveries == {}


def test_the_rules_that_carry_recoveries_may_publish_to_the_encrypted_topic_for_this_stack_only(synthesized):
    (policy,) = synthesized.resources("AWS::SNS::TopicPolicy").values()
    [statement] = [
        s
        for s in policy["Properties"]["PolicyDocument"]["Statement"]
        if s.get("Principal") == {"Service": "events.amazonaws.com"}
    ]
    assert statement["Action"] == "sns:Publish"
    assert "rule/lanes-" in str(statement["Condition"]["ArnLike"]["aws:SourceArn"])
    assert "aws:SourceAccount" in statement["Condition"]["StringEquals"]
    (key,) = synthesized.resources("AWS::KMS::Key").values()
    [grant] = [
        s
        for s in key["Properties"]["KeyPolicy"]["Statement"]
        if s.get("Principal") == {"Service": "events.amazonaws.com"}
    ]
    assert set(grant["Action"]) == {"kms:Decrypt", "kms:GenerateDataKey*"}
    assert grant["Condition"] == statement["Condition"]


def _healthy_first_minutes(alarm: AlarmDefinition, now: float) -> MetricsStore:
    """What CloudWatch holds in the minutes after a first deploy with nothing wrong: SQS publishes
    its queues' metrics (every queue empty), nothing else has run or been sent yet."""
    store = MetricsStore()
    if alarm.namespace == "AWS/SQS":
        for index in range(alarm.evaluation_periods + 1):
            store.put(alarm.namespace, alarm.metric_name, alarm.dimensions, 0, "Count", now - index * alarm.period)
    return store


@pytest.mark.parametrize("name", ["prod", "local"])
def test_a_first_deploy_pages_nobody_while_nothing_is_wrong(synth_env, name):
    # Given every alarm of a freshly deployed stack, created in INSUFFICIENT_DATA
    synthesized = synth_env(name)
    recoveries = _recoveries(synthesized)
    pages = []
    for logical_id, properties in _alarms(synthesized).items():
        alarm = AlarmDefinition.from_template(logical_id, properties, "lanes")
        now = time.time()
        # When CloudWatch first evaluates it over what a healthy new stack publishes
        state, _ = alarm.evaluate(_healthy_first_minutes(alarm, now), now)
        assert state != ALARM, logical_id
        # Then whatever state it settles in runs no action and sends no recovery
        actions = {ALARM: alarm.alarm_actions, OK: alarm.ok_actions, INSUFFICIENT: alarm.insufficient_data_actions}
        if state != INSUFFICIENT:
            pages += [(logical_id, state, topic) for topic in actions[state]]
        rule = recoveries.get(logical_id)
        if rule is not None and INSUFFICIENT in rule["EventPattern"]["detail"]["previousState"]["value"]:
            pages.append((logical_id, "recovery", rule))
    assert pages == []
