"""The local runtime plays what each alarm notifies as CloudWatch and EventBridge do: a state's
actions on every change into it, none at creation; an alarm on a signal's absence pages on
INSUFFICIENT_DATA only once the signal has been seen; a recovery reaches on-call only through the
alarm's rule, for its change from ALARM to OK, as EventBridge for that rule."""

from __future__ import annotations

import boto3
import pytest

from local_aws.alarms import ALARM, INSUFFICIENT, OK, AlarmDefinition, AlarmEvaluator, AlarmRule
from local_aws.iam import played
from local_aws.iam.documents import parse_document
from local_aws.iam.enforcer import ENFORCER
from local_aws.iam.template import Grants
from local_aws.metrics import MetricsStore
from local_aws.on_call import OnCallInbox
from stacks.constructs.alarms import RECOVERY_EVENT

ACCOUNT = "123456789012"
REGION = "us-east-1"
RULE = f"arn:aws:events:{REGION}:{ACCOUNT}:rule/lanes-local-AiLaneOldestMessageAgeRecovered"


def _may_publish(service: str, source: str) -> dict:
    return {
        "Effect": "Allow",
        "Principal": {"Service": f"{service}.amazonaws.com"},
        "Action": "sns:Publish",
        "Resource": "*",
        "Condition": {
            "StringEquals": {"aws:SourceAccount": ACCOUNT},
            "ArnLike": {"aws:SourceArn": source},
        },
    }


CLOUDWATCH = _may_publish("cloudwatch", f"arn:aws:cloudwatch:{REGION}:{ACCOUNT}:alarm:lanes-local-*")
EVENTS = _may_publish("events", f"arn:aws:events:{REGION}:{ACCOUNT}:rule/lanes-local-*")


@pytest.fixture
def topic(aws):
    sns = boto3.client("sns", region_name=REGION)
    arn = sns.create_topic(Name="on-call")["TopicArn"]
    sns.subscribe(TopicArn=arn, Protocol="email", Endpoint="on-call@localhost")
    return arn


class Played:
    """One alarm on the runtime's evaluator, its metric put by the test, its clock moved by it."""

    def __init__(self, alarm: AlarmDefinition, topic: str, statements: list[dict]) -> None:
        self.grants = Grants(account=ACCOUNT, region=REGION)
        self.grants.logical[topic] = "OnCallTopic"
        self.grants.resource_policies[topic] = parse_document({"Statement": statements}, resource_policy=True)
        ENFORCER.register(self.grants)
        self.alarm = alarm
        self.inbox = OnCallInbox()
        self.store = MetricsStore()
        self.evaluator = AlarmEvaluator(
            [alarm],
            self.store,
            cloudwatch=boto3.client("cloudwatch", region_name=REGION),
            sns=boto3.client("sns", region_name=REGION),
            on_change=lambda alarm, previous: None,
            refusal=played.alarm_action_refusal,
            rule_refusal=played.rule_publish_refusal,
            deliver=self.inbox.deliver,
        )
        self.evaluator.create_in_moto()
        self.now = 1_000_000.0

    def close(self) -> None:
        ENFORCER.unregister(self.grants)

    def put(self, value: float) -> None:
        self.store.put(self.alarm.namespace, self.alarm.metric_name, self.alarm.dimensions, value, "Count", self.now)

    def evaluate(self, after_seconds: float) -> list[tuple[str, str]]:
        """Moves the clock on, evaluates as the runtime does, and gives the pages that came of it."""
        self.now += after_seconds
        before = len(self.inbox.pages)
        state, reason = self.alarm.evaluate(self.store, self.now)
        if state != self.alarm.state:
            previous, self.alarm.state, self.alarm.reason = self.alarm.state, state, reason
            self.evaluator._notify(self.alarm, previous)
        return [(page.alarm, page.state) for page in self.inbox.pages[before:]]


def _definition(topic: str, **overrides) -> AlarmDefinition:
    fields = {
        "logical_id": "AiLaneOldestMessageAge",
        "name": "lanes-local-AiLaneOldestMessageAge",
        "namespace": "AWS/SQS",
        "metric_name": "ApproximateAgeOfOldestMessage",
        "dimensions": {"QueueName": "ai"},
        "statistic": "Maximum",
        "period": 10,
        "evaluation_periods": 1,
        "datapoints_to_alarm": 1,
        "threshold": 20,
        "comparison": "GreaterThanThreshold",
        "treat_missing": "notBreaching",
        "description": "the ai lane is behind its objective",
        "alarm_actions": [topic],
        "ok_actions": [],
    }
    return AlarmDefinition(**{**fields, **overrides})


def test_a_condition_pages_when_it_starts_and_when_it_ends_but_not_when_it_is_created(topic):
    # Given an alarm that pages on ALARM, and its rule carrying the change from ALARM to OK
    alarm = _definition(topic)
    alarm.rules.append(AlarmRule(RULE, RECOVERY_EVENT, [topic]))
    played_alarm = Played(alarm, topic, [CLOUDWATCH, EVENTS])
    try:
        name = alarm.name
        # When its first evaluation finds nothing wrong: OK, and nobody is paged
        played_alarm.put(0)
        assert played_alarm.evaluate(1) == []
        assert alarm.state == OK
        # When the lane falls behind: paged once
        played_alarm.put(45)
        assert played_alarm.evaluate(1) == [(name, ALARM)]
        # When it catches up: the rule's recovery reaches on-call
        played_alarm.put(0)
        assert played_alarm.evaluate(11) == [(name, OK)]
    finally:
        played_alarm.close()


def test_a_recovery_the_topic_does_not_let_eventbridge_publish_reaches_nobody(topic):
    alarm = _definition(topic)
    alarm.rules.append(AlarmRule(RULE, RECOVERY_EVENT, [topic]))
    played_alarm = Played(alarm, topic, [CLOUDWATCH])
    try:
        played_alarm.put(45)
        assert played_alarm.evaluate(1) == [(alarm.name, ALARM)]
        played_alarm.put(0)
        assert played_alarm.evaluate(11) == []
        assert "events.amazonaws.com is not authorized" in str(alarm.actions[-1].error)
    finally:
        played_alarm.close()


def test_a_silence_alarm_is_armed_by_its_signal_and_pages_when_it_stops(topic):
    # Given an alarm on the sweeper's reports, paging on INSUFFICIENT_DATA, missing data missing
    alarm = _definition(
        topic,
        logical_id="SweeperSilentOnWebhooks",
        name="lanes-local-SweeperSilentOnWebhooks",
        namespace="Lanes/local",
        metric_name="OldestUnprocessedAgeSeconds",
        dimensions={"Source": "webhook", "service": "sweeper"},
        statistic="SampleCount",
        evaluation_periods=3,
        datapoints_to_alarm=3,
        threshold=1,
        comparison="LessThanThreshold",
        treat_missing="missing",
        alarm_actions=[],
        insufficient_data_actions=[topic],
    )
    played_alarm = Played(alarm, topic, [CLOUDWATCH, EVENTS])
    try:
        # When no report has ever come (a first deploy, the first sweep not due yet): nobody is paged
        assert played_alarm.evaluate(1) == []
        assert played_alarm.evaluate(30) == []
        assert alarm.state == INSUFFICIENT
        # When the sweeper reports: OK, silently
        played_alarm.put(0)
        assert played_alarm.evaluate(1) == []
        assert alarm.state == OK
        # When its reports stop for the alarm's whole range: paged
        assert played_alarm.evaluate(31) == [(alarm.name, INSUFFICIENT)]
    finally:
        played_alarm.close()
