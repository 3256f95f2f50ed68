"""An alarm's action runs as CloudWatch runs it: published to the on-call topic only if the topic's
policy (and its key's) lets CloudWatch in for that alarm; then SNS hands the page to the topic's
subscribers, and the local ones land in the on-call inbox. Refused, nobody is paged and the
alarm's history says why, as DescribeAlarmHistory does on AWS."""

from __future__ import annotations

import json

import boto3
import pytest

from local_aws.alarms import ALARM, AlarmDefinition, AlarmEvaluator, alarm_arn
from local_aws.iam import played
from local_aws.iam.documents import parse_document
from local_aws.iam.enforcer import ENFORCER
from local_aws.iam.template import Grants
from local_aws.metrics import MetricsStore
from local_aws.on_call import OnCallInbox

ACCOUNT = "123456789012"
REGION = "us-east-1"
TLS_ONLY = {
    "Effect": "Deny",
    "Principal": "*",
    "Action": "sns:Publish",
    "Resource": "*",
    "Condition": {"Bool": {"aws:SecureTransport": "false"}},
}
CLOUDWATCH_MAY_PUBLISH = {
    "Effect": "Allow",
    "Principal": {"Service": "cloudwatch.amazonaws.com"},
    "Action": "sns:Publish",
    "Resource": "*",
    "Condition": {
        "StringEquals": {"aws:SourceAccount": ACCOUNT},
        "ArnLike": {"aws:SourceArn": f"arn:aws:cloudwatch:{REGION}:{ACCOUNT}:alarm:lanes-local-*"},
    },
}


@pytest.fixture
def topic(aws):
    sns = boto3.client("sns", region_name=REGION)
    arn = sns.create_topic(Name="on-call")["TopicArn"]
    sns.subscribe(TopicArn=arn, Protocol="email", Endpoint="on-call@localhost")
    sns.subscribe(TopicArn=arn, Protocol="email", Endpoint="someone@example.com")
    return arn


def _alarm(topic: str) -> AlarmDefinition:
    return AlarmDefinition(
        logical_id="AiLaneDeadLetters",
        name="lanes-local-AiLaneDeadLetters",
        namespace="AWS/SQS",
        metric_name="ApproximateNumberOfMessagesVisible",
        dimensions={"QueueName": "dlq"},
        statistic="Maximum",
        period=1,
        evaluation_periods=1,
        datapoints_to_alarm=1,
        threshold=1,
        comparison="GreaterThanOrEqualToThreshold",
        treat_missing="notBreaching",
        description="work is in the dead-letter queue",
        alarm_actions=[topic],
        ok_actions=[topic],
    )


def _fire(topic: str, statements: list[dict]) -> tuple[AlarmDefinition, OnCallInbox, list[str]]:
    """The alarm, evaluated once with its metric breaching, under a topic policy of `statements`."""
    grants = Grants(account=ACCOUNT, region=REGION)
    grants.logical[topic] = "OnCallTopic"
    grants.resource_policies[topic] = parse_document({"Statement": statements}, resource_policy=True)
    ENFORCER.register(grants)
    told: list[str] = []
    inbox = OnCallInbox(on_undeliverable=told.append)
    alarm = _alarm(topic)
    store = MetricsStore()
    cloudwatch = boto3.client("cloudwatch", region_name=REGION)
    evaluator = AlarmEvaluator(
        [alarm],
        store,
        cloudwatch=cloudwatch,
        sns=boto3.client("sns", region_name=REGION),
        on_change=lambda alarm, previous: None,
        refusal=played.alarm_action_refusal,
        deliver=inbox.deliver,
    )
    evaluator.create_in_moto()
    evaluator._started -= 10  # the alarm's first period is over
    store.put("AWS/SQS", "ApproximateNumberOfMessagesVisible", {"QueueName": "dlq"}, 1, "Count")
    try:
        evaluator.evaluate_all()
    finally:
        ENFORCER.unregister(grants)
    return alarm, inbox, told


def _history(kind: str) -> list[dict]:
    return boto3.client("cloudwatch", region_name=REGION).describe_alarm_history(
        AlarmName="lanes-local-AiLaneDeadLetters", HistoryItemType=kind
    )["AlarmHistoryItems"]


def test_a_topic_policy_that_lets_cloudwatch_in_pages_the_local_on_call_inbox(topic):
    alarm, inbox, told = _fire(topic, [TLS_ONLY, CLOUDWATCH_MAY_PUBLISH])

    assert alarm.state == ALARM
    [page] = inbox.pages
    assert (page.endpoint, page.subject, page.state) == ("on-call@localhost", f"ALARM: {alarm.name}", ALARM)
    # An address off this machine gets nothing, and the runtime says so
    assert told == [
        "on-call email someone@example.com gets no page from the local runtime: nothing leaves this machine "
        "(only addresses at localhost land in the local inbox)"
    ]
    [action] = _history("Action")
    assert action["HistorySummary"] == f"Successfully executed action {topic}"
    assert [item["HistorySummary"] for item in _history("StateUpdate")] == [
        "Alarm updated from INSUFFICIENT_DATA to ALARM"
    ]


def test_a_topic_policy_without_cloudwatch_pages_nobody_and_the_alarms_history_says_why(topic):
    # Given the topic policy the stack used to ship: the TLS-only deny, nothing allowed
    alarm, inbox, _ = _fire(topic, [TLS_ONLY])

    # Then the alarm fires, nobody is paged, and its history holds CloudWatch's refusal
    assert alarm.state == ALARM
    assert inbox.pages == []
    [action] = _history("Action")
    assert action["HistorySummary"] == (
        f'Failed to execute action {topic}. Received error: "CloudWatch Alarms is not authorized to perform: '
        f'SNS:Publish on resource:{topic}"'
    )
    assert json.loads(action["HistoryData"]) == {"actionState": "Failed"}
    [run] = alarm.actions
    assert run.error is not None


def test_another_stacks_alarm_may_not_publish_to_this_topic(topic):
    grants = Grants(account=ACCOUNT, region=REGION)
    grants.logical[topic] = "OnCallTopic"
    grants.resource_policies[topic] = parse_document({"Statement": [CLOUDWATCH_MAY_PUBLISH]}, resource_policy=True)
    ENFORCER.register(grants)
    try:
        assert played.alarm_action_refusal(alarm_arn("lanes-local-X"), topic) is None
        assert played.alarm_action_refusal(alarm_arn("other-stack-X"), topic) is not None
    finally:
        ENFORCER.unregister(grants)
