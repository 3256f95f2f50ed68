"""The on-call topic and the one way alarms are made: every alarm notifies the topic on ALARM and
on OK, so a page also says when it is over."""

from __future__ import annotations

from aws_cdk import ArnFormat, Duration, Stack
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_cloudwatch_actions as actions
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_sns as sns
from constructs import Construct

from stacks.config.environments import Environment
from stacks.constructs.on_call_endpoints import Subscribers
from stacks.constructs.removal import keeps_data


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
        key.add_to_resource_policy(
            iam.PolicyStatement(
                principals=[iam.ServicePrincipal("cloudwatch.amazonaws.com")],
                actions=["kms:Decrypt", "kms:GenerateDataKey*"],
                resources=["*"],
                conditions=own_alarms,
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
        self.subscribers = Subscribers(self, "Subscribers", topic=self.topic, endpoints=env.on_call)
        self._action = actions.SnsAction(self.topic)
        if self.subscribers.undelivered is not None:
            self.undelivered_alarm = self.alarm(
                self,
                "UndeliveredPages",
                metric=self.subscribers.undelivered.metric_approximate_number_of_messages_visible(
                    period=self.period(), statistic="Maximum"
                ),
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
        comparison: cloudwatch.ComparisonOperator = cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
        evaluation_periods: int | None = None,
        missing: cloudwatch.TreatMissingData = cloudwatch.TreatMissingData.NOT_BREACHING,
        ok_action: bool = True,
    ) -> cloudwatch.Alarm:
        alarm = cloudwatch.Alarm(
            scope,
            construct_id,
            metric=metric,
            threshold=threshold,
            comparison_operator=comparison,
            evaluation_periods=evaluation_periods or self.env.alarms.evaluation_periods,
            treat_missing_data=missing,
            alarm_description=description,
        )
        alarm.add_alarm_action(self._action)
        if ok_action:
            alarm.add_ok_action(self._action)
        return alarm

    def period(self) -> Duration:
        return Duration.seconds(self.env.alarms.period_seconds)
