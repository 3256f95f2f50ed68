"""The on-call topic and the one way alarms are made, with the one rule for what pages (`Notice`).

CloudWatch runs an alarm's OK actions on every change into OK, the first evaluation after it is
created included (INSUFFICIENT_DATA to OK): with an OK action on every alarm, a first deploy paged
every subscriber once per alarm while nothing was wrong. So no alarm has an OK action. An alarm
pages on ALARM; where the end of the trouble must be known (`Notice.CONDITION`), an EventBridge
rule of its own sends the topic its change from ALARM to OK, and only that change, so its creation
is silent. An alarm on a signal's absence (`Notice.SILENCE`) treats missing data as missing: it
stays in INSUFFICIENT_DATA from its creation until the signal is first seen, and pages on its
INSUFFICIENT_DATA action when the signal stops after that, so it is armed by the signal itself."""

from __future__ import annotations

from enum import Enum

import jsii
from aws_cdk import ArnFormat, Duration, Stack
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_cloudwatch_actions as actions
from aws_cdk import aws_events as events
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_sns as sns
from aws_cdk.interfaces.aws_events import IRuleRef
from constructs import Construct

from stacks.config.environments import Environment
from stacks.constructs.on_call_endpoints import Subscribers
from stacks.constructs.removal import keeps_data


class Notice(Enum):
    """What of an alarm's changes reaches on-call."""

    EVENT = "event"
    """Something happened that needs a person (a dead letter, an abandoned row, a 5xx): ALARM
    pages; its OK says only that the next period had none, so it pages nobody."""
    CONDITION = "condition"
    """A state that lasts until it heals or is fixed (a lane behind its objective, a dependency
    failing the probe): ALARM pages, and so does its return from ALARM to OK."""
    SILENCE = "silence"
    """A signal that should keep coming (the sweeper's reports, Meta's deliveries) has stopped:
    pages on INSUFFICIENT_DATA, which a metric that has never been seen never leaves."""


RECOVERY_EVENT = {"previousState": {"value": ["ALARM"]}, "state": {"value": ["OK"]}}
"""The one change of a CONDITION alarm that is news besides ALARM itself."""


def rule_arns(stack: Stack) -> str:
    """The ARNs of this stack's EventBridge rules, matched like `alarm_arns`."""
    return stack.format_arn(service="events", resource="rule", resource_name=f"{stack.stack_name}-*")


@jsii.implements(events.IRuleTarget)
class _Topic:
    """The on-call topic as a rule's target. The topic's own policy already lets this stack's
    rules publish (OnCall), so unlike `aws_events_targets.SnsTopic` it grants nothing per rule."""

    def __init__(self, topic: sns.ITopic) -> None:
        self._topic = topic

    def bind(self, rule: IRuleRef, id: str | None = None) -> events.RuleTargetConfig:
        return events.RuleTargetConfig(arn=self._topic.topic_arn)


def alarm_arns(stack: Stack) -> str:
    """The ARNs of this stack's alarms. None is named in the template, so CloudFormation names
    each `<stack name>-<logical id>-<suffix>` (and the local runtime `<stack name>-<logical id>`):
    the stack's name and a dash begin every one, and the pattern needs no list kept beside the
    alarms. It would also match a stack named `<stack name>-...` in the same account and region;
    no stack of this project is named so."""
    return stack.format_arn(
        service="cloudwatch",
        resource="alarm",
        resource_name=f"{stack.stack_name}-*",
        arn_format=ArnFormat.COLON_RESOURCE_NAME,
    )


class OnCall(Construct):
    """The SNS topic for alarms, encrypted with a key CloudWatch may use (alarms cannot publish to
    a topic encrypted with the AWS-managed SNS key), and subscribed by every on-call endpoint the
    environment names."""

    def __init__(self, scope: Construct, construct_id: str, *, env: Environment) -> None:
        super().__init__(scope, construct_id)
        self.env = env
        key = kms.Key(
            self,
            "TopicKey",
            enable_key_rotation=True,
            description=f"lanes-{env.name} on-call topic",
            removal_policy=keeps_data(env),
        )
        stack = Stack.of(self)
        # CloudWatch on behalf of this stack's alarms only: without these conditions, an alarm in
        # any account could have CloudWatch use this key and publish here (the confused deputy).
        own_alarms = {
            "StringEquals": {"aws:SourceAccount": stack.account},
            "ArnLike": {"aws:SourceArn": alarm_arns(stack)},
        }
        # EventBridge on behalf of this stack's rules only: they carry the recoveries (Notice.CONDITION).
        own_rules = {
            "StringEquals": {"aws:SourceAccount": stack.account},
            "ArnLike": {"aws:SourceArn": rule_arns(stack)},
        }
        for service, conditions in (("cloudwatch", own_alarms), ("events", own_rules)):
            key.add_to_resource_policy(
                iam.PolicyStatement(
                    principals=[iam.ServicePrincipal(f"{service}.amazonaws.com")],
                    actions=["kms:Decrypt", "kms:GenerateDataKey*"],
                    resources=["*"],
                    conditions=conditions,
                )
            )
        self.topic = sns.Topic(
            self, "Topic", master_key=key, enforce_ssl=True, display_name=f"lanes {env.name} on-call"
        )
        # CloudWatch publishes as a service principal, which only the topic's own policy can allow
        # (enforce_ssl's statement only denies): without this, every alarm action fails with "not
        # authorized to perform SNS:Publish" and no page is ever sent.
        self.topic.add_to_resource_policy(
            iam.PolicyStatement(
                sid="AllowThisStacksAlarmsToPublish",
                principals=[iam.ServicePrincipal("cloudwatch.amazonaws.com")],
                actions=["sns:Publish"],
                resources=[self.topic.topic_arn],
                conditions=own_alarms,
            )
        )
        self.topic.add_to_resource_policy(
            iam.PolicyStatement(
                sid="AllowThisStacksRecoveriesToPublish",
                principals=[iam.ServicePrincipal("events.amazonaws.com")],
                actions=["sns:Publish"],
                resources=[self.topic.topic_arn],
                conditions=own_rules,
            )
        )
        self._target = _Topic(self.topic)
        self.recovery_rules: list[events.Rule] = []
        self.subscribers = Subscribers(self, "Subscribers", topic=self.topic, endpoints=env.on_call)
        self._action = actions.SnsAction(self.topic)
        if self.subscribers.undelivered is not None:
            self.undelivered_alarm = self.alarm(
                self,
                "UndeliveredPages",
                metric=self.subscribers.undelivered.metric_approximate_number_of_messages_visible(
                    period=self.period(), statistic="Maximum"
                ),
                notice=Notice.EVENT,
                threshold=1,
                comparison=cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
                evaluation_periods=1,
                description="SNS could not deliver a page to an on-call email address or HTTPS endpoint. "
                "See docs/RUNBOOK.md#undelivered-pages.",
            )

    def alarm(
        self,
        scope: Construct,
        construct_id: str,
        *,
        metric: cloudwatch.IMetric,
        threshold: float,
        description: str,
        notice: Notice,
        comparison: cloudwatch.ComparisonOperator = cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
        evaluation_periods: int | None = None,
        datapoints_to_alarm: int | None = None,
        missing: cloudwatch.TreatMissingData = cloudwatch.TreatMissingData.NOT_BREACHING,
    ) -> cloudwatch.Alarm:
        """An alarm that pages as `notice` says. A SILENCE alarm's missing data is always
        `missing` (see the module's docstring), whatever `missing` says."""
        if notice is Notice.SILENCE:
            missing = cloudwatch.TreatMissingData.MISSING
        alarm = cloudwatch.Alarm(
            scope,
            construct_id,
            metric=metric,
            threshold=threshold,
            comparison_operator=comparison,
            evaluation_periods=evaluation_periods or self.env.alarms.evaluation_periods,
            datapoints_to_alarm=datapoints_to_alarm,
            treat_missing_data=missing,
            alarm_description=description,
        )
        if notice is Notice.SILENCE:
            alarm.add_insufficient_data_action(self._action)
            return alarm
        alarm.add_alarm_action(self._action)
        if notice is Notice.CONDITION:
            rule = events.Rule(
                scope,
                f"{construct_id}Recovered",
                description=f"{construct_id}: back to OK after paging",
                event_pattern=events.EventPattern(
                    source=["aws.cloudwatch"],
                    detail_type=["CloudWatch Alarm State Change"],
                    resources=[alarm.alarm_arn],
                    detail=RECOVERY_EVENT,
                ),
                targets=[self._target],
            )
            self.recovery_rules.append(rule)
        return alarm

    def period(self) -> Duration:
        return Duration.seconds(self.env.alarms.period_seconds)
