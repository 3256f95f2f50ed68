"""Preflight for who the alarms reach once deployed: an on-call endpoint that never confirmed its
subscription, or a chat workspace AWS Chatbot was never authorised for, is paged by nothing.

- on-call subscriptions (once the stack exists): each email address and HTTPS endpoint the
  environment pages is subscribed to the alarm topic and confirmed. SNS mails (or posts) a
  confirmation first and delivers nothing until it is followed; the topic lists such a
  subscription as `PendingConfirmation`.
- chat channels: each Slack workspace and Microsoft Teams team the environment pages has been
  authorised in AWS Chatbot, a step done once per account in its console that no API can do (a
  channel configuration for a workspace that is not fails the deploy).
"""

from __future__ import annotations

from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from ops.aws import describe_error
from ops.commands.preflight_result import FAIL, PASS, SKIP, Result
from ops.context import Context
from ops.resolve import Deployment, stack_name
from stacks.config.on_call import EmailEndpoint, HttpsEndpoint, SlackChannel, TeamsChannel

PENDING = "PendingConfirmation"
SUBSCRIPTIONS = "on-call subscriptions"
CHAT = "chat channels"
_CONSOLE = "https://console.aws.amazon.com/chatbot/"


def check_subscriptions(ctx: Context, deployment: Deployment | None) -> Result:
    endpoints = [e for e in ctx.env.on_call if isinstance(e, EmailEndpoint | HttpsEndpoint)]
    if not endpoints:
        return Result(SKIP, SUBSCRIPTIONS, f"{ctx.env.name} pages no email address or HTTPS endpoint")
    if deployment is None:
        return Result(SKIP, SUBSCRIPTIONS, f"{stack_name(ctx.env)} is not deployed yet; confirm them after it is")
    topic = deployment.outputs.get("AlarmTopicArn")
    if not topic:
        return Result(FAIL, SUBSCRIPTIONS, f"{deployment.stack} has no AlarmTopicArn output: deploy the stack again")
    try:
        found = _subscriptions(ctx.aws.client("sns"), topic)
    except (BotoCoreError, ClientError) as exc:
        return Result(FAIL, SUBSCRIPTIONS, f"cannot list the subscriptions of {topic}: {describe_error(exc)}")
    problems = []
    for endpoint in endpoints:
        target = endpoint.address if isinstance(endpoint, EmailEndpoint) else endpoint.url
        arns = [arn for (protocol, where), arn in found.items() if protocol == endpoint.kind and where == target]
        if not arns:
            problems.append(f"{endpoint.describe()} is not subscribed to the alarm topic: deploy the stack again")
        elif all(arn == PENDING for arn in arns):
            how = (
                "follow the link SNS mailed it" if isinstance(endpoint, EmailEndpoint) else "confirm it at the service"
            )
            problems.append(f"{endpoint.describe()} has not confirmed its subscription ({how}); it is paged nothing")
    if problems:
        return Result(FAIL, SUBSCRIPTIONS, "; ".join(problems))
    return Result(PASS, SUBSCRIPTIONS, f"{len(endpoints)} endpoint(s) subscribed and confirmed")


def _subscriptions(client: Any, topic: str) -> dict[tuple[str, str], str]:
    """(protocol, endpoint) to subscription ARN, or `PendingConfirmation`."""
    found: dict[tuple[str, str], str] = {}
    for page in client.get_paginator("list_subscriptions_by_topic").paginate(TopicArn=topic):
        for subscription in page.get("Subscriptions") or []:
            found[(subscription.get("Protocol", ""), subscription.get("Endpoint", ""))] = subscription.get(
                "SubscriptionArn", ""
            )
    return found


def check_chat_channels(ctx: Context) -> Result:
    slack = [e for e in ctx.env.on_call if isinstance(e, SlackChannel)]
    teams = [e for e in ctx.env.on_call if isinstance(e, TeamsChannel)]
    if not slack and not teams:
        return Result(SKIP, CHAT, f"{ctx.env.name} pages no Slack or Teams channel")
    if ctx.target.endpoint_url:
        return Result(SKIP, CHAT, f"{ctx.target.endpoint_url} is an emulator, which has no AWS Chatbot")
    client = ctx.aws.client("chatbot")
    try:
        workspaces = (
            _authorised(client, "describe_slack_workspaces", "SlackWorkspaces", "SlackTeamId") if slack else set()
        )
        teams_ok = (
            _authorised(client, "list_microsoft_teams_configured_teams", "ConfiguredTeams", "TeamId")
            if teams
            else set()
        )
    except (BotoCoreError, ClientError) as exc:
        return Result(
            FAIL,
            CHAT,
            f"cannot read AWS Chatbot's authorised workspaces: {describe_error(exc)}. Run preflight as a principal "
            "allowed chatbot:DescribeSlackWorkspaces and chatbot:ListMicrosoftTeamsConfiguredTeams",
        )
    missing = sorted(
        {f"Slack workspace {e.workspace_id}" for e in slack if e.workspace_id not in workspaces}
        | {f"Teams team {e.team_id}" for e in teams if e.team_id.lower() not in teams_ok}
    )
    if missing:
        return Result(
            FAIL,
            CHAT,
            f"AWS Chatbot is not authorised for {', '.join(missing)} in this account: authorise each once in "
            f"the Chatbot console ({_CONSOLE}, configure a client), or the deploy fails creating its channel",
        )
    return Result(PASS, CHAT, f"{len(slack) + len(teams)} channel(s), their workspaces authorised in AWS Chatbot")


def _authorised(client: Any, operation: str, key: str, field: str) -> set[str]:
    found: set[str] = set()
    token = None
    while True:
        page = getattr(client, operation)(**({"NextToken": token} if token else {}))
        found |= {
            str(item.get(field, "")).lower() if field == "TeamId" else str(item.get(field, ""))
            for item in page.get(key) or []
        }
        token = page.get("NextToken")
        if not token:
            return found
