"""The on-call topic's subscribers, one per endpoint the environment names: SNS email and https
subscriptions, and an AWS Chatbot channel configuration per Slack or Teams channel.

A chat channel's role and guardrail allow only what Chatbot reads to show an alarm in the channel
(AWS's "Notification permissions" template: CloudWatch's Describe, Get and List calls), so nobody
in the channel can use it, or a role of their own mapped to it, to change anything in the account.
"""

from __future__ import annotations

from aws_cdk import Duration, Stack
from aws_cdk import aws_chatbot as chatbot
from aws_cdk import aws_iam as iam
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sns_subscriptions as subscriptions
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from stacks.config.lanes import DLQ_RETENTION_DAYS
from stacks.config.on_call import (
    EmailEndpoint,
    HttpsEndpoint,
    OnCallEndpoint,
    SlackChannel,
    TeamsChannel,
    sns_delivers,
)

NOTIFICATION_READS = ("cloudwatch:Describe*", "cloudwatch:Get*", "cloudwatch:List*")
"""What Chatbot reads to render an alarm's notification (its metric's graph, the alarm's state)."""
CHATBOT_LOGGING = "ERROR"
"""Failed deliveries are logged (Chatbot's log group in us-east-1); successful ones are not."""


def _reads() -> iam.PolicyStatement:
    # CloudWatch's reads of metric data and graph images have no resource-level permissions.
    return iam.PolicyStatement(actions=list(NOTIFICATION_READS), resources=["*"])


class ChatChannel(Construct):
    """One chat channel's Chatbot configuration, with a role of its own and its guardrail."""

    def __init__(
        self, scope: Construct, construct_id: str, *, topic: sns.ITopic, channel: SlackChannel | TeamsChannel
    ) -> None:
        super().__init__(scope, construct_id)
        name = f"{Stack.of(self).stack_name}-{channel.kind}-{channel.key}"
        self.role = iam.Role(
            self,
            "Role",
            assumed_by=iam.ServicePrincipal("chatbot.amazonaws.com"),
            description=f"{name}: reads what an alarm notification shows, nothing else",
        )
        self.role.add_to_policy(_reads())
        # Without a guardrail Chatbot applies AdministratorAccess as the channel's ceiling; this
        # one is no wider than the role, so a user role mapped in the channel cannot exceed it.
        self.guardrail = iam.ManagedPolicy(
            self,
            "Guardrail",
            description=f"{name}: the most the channel may do",
            statements=[_reads()],
        )
        common = {
            "configuration_name": name,
            "iam_role_arn": self.role.role_arn,
            "sns_topic_arns": [topic.topic_arn],
            "guardrail_policies": [self.guardrail.managed_policy_arn],
            "logging_level": CHATBOT_LOGGING,
        }
        self.configuration: chatbot.CfnSlackChannelConfiguration | chatbot.CfnMicrosoftTeamsChannelConfiguration
        if isinstance(channel, SlackChannel):
            self.configuration = chatbot.CfnSlackChannelConfiguration(
                self,
                "Configuration",
                slack_workspace_id=channel.workspace_id,
                slack_channel_id=channel.channel_id,
                **common,  # type: ignore[arg-type]
            )
        else:
            self.configuration = chatbot.CfnMicrosoftTeamsChannelConfiguration(
                self,
                "Configuration",
                team_id=channel.team_id,
                teams_channel_id=channel.chatbot_channel_id,
                teams_tenant_id=channel.tenant_id,
                **common,  # type: ignore[arg-type]
            )


class Subscribers(Construct):
    """Every endpoint, subscribed to the topic. What SNS cannot deliver to an email or https
    endpoint (an address that bounces, an integration that refuses) lands in `undelivered`,
    which the on-call alarms watch: a page that reached no one is itself a page, to whichever
    endpoints still work, and is kept 14 days to be read."""

    def __init__(
        self, scope: Construct, construct_id: str, *, topic: sns.Topic, endpoints: tuple[OnCallEndpoint, ...]
    ) -> None:
        super().__init__(scope, construct_id)
        self.chat_channels: list[ChatChannel] = []
        self.undelivered = (
            sqs.Queue(
                self,
                "Undelivered",
                retention_period=Duration.days(DLQ_RETENTION_DAYS),
                encryption=sqs.QueueEncryption.SQS_MANAGED,
                enforce_ssl=True,
            )
            if sns_delivers(endpoints)
            else None
        )
        for endpoint in endpoints:
            if isinstance(endpoint, EmailEndpoint):
                topic.add_subscription(
                    subscriptions.EmailSubscription(endpoint.address, dead_letter_queue=self.undelivered)
                )
            elif isinstance(endpoint, HttpsEndpoint):
                topic.add_subscription(
                    subscriptions.UrlSubscription(
                        endpoint.url, protocol=sns.SubscriptionProtocol.HTTPS, dead_letter_queue=self.undelivered
                    )
                )
            else:
                self.chat_channels.append(
                    ChatChannel(self, f"{endpoint.kind.capitalize()}{endpoint.key}", topic=topic, channel=endpoint)
                )
