"""Who the alarms page: every on-call endpoint an environment names is subscribed by its stack."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
from cfnlint.api import REGIONS, ManualArgs, lint

from ops.cost.environment_cost import environment_cost
from stacks.app_builder import build_app
from stacks.config.environments import (
    ENVIRONMENTS,
    LOCAL_ON_CALL,
    EmailEndpoint,
    HttpsEndpoint,
    SlackChannel,
    TeamsChannel,
)
from stacks.runtime_env import stack_name

from .conftest import Synthesized

pytestmark = pytest.mark.xdist_group("synth")

TEAM = "0b5c3c3e-8d4e-4f0a-9a55-2a7d3c1f9e11"
TENANT = "6f1d2e3c-4b5a-4968-8776-5a4b3c2d1e0f"
EVERY_KIND = (
    EmailEndpoint("oncall@example.com"),
    HttpsEndpoint("https://events.pagerduty.com/integration/0123456789abcdef/enqueue"),
    SlackChannel(workspace_id="T012AB3CD", channel_id="C0123ABCD"),
    TeamsChannel(team_id=TEAM, channel_id="19:a1b2c3@thread.tacv2", tenant_id=TENANT),
)
NOTIFICATION_READS = [
    {"Action": ["cloudwatch:Describe*", "cloudwatch:Get*", "cloudwatch:List*"], "Effect": "Allow", "Resource": "*"}
]


@pytest.fixture(scope="module")
def paged(tmp_path_factory) -> Synthesized:
    """prod with one endpoint of every kind, synthesized with cdk-nag enforcing."""
    env = replace(ENVIRONMENTS["prod"], on_call=EVERY_KIND)
    outdir = str(tmp_path_factory.mktemp("paged"))
    app, stack = build_app(env, outdir=outdir)
    template = app.synth().get_stack_by_name(stack_name(env)).template
    return Synthesized(env=env, stack=stack, template=template, outdir=outdir)


def _topic(synthesized) -> dict:
    (topic_id,) = synthesized.resources("AWS::SNS::Topic")
    return {"Ref": topic_id}


def _undelivered_id(synthesized) -> str:
    (queue_id,) = [
        logical_id
        for logical_id, queue in synthesized.resources("AWS::SQS::Queue").items()
        if "QueueName" not in queue["Properties"] and "RedriveAllowPolicy" not in queue["Properties"]
    ]
    return queue_id


def test_local_pages_its_on_call_inbox_and_nothing_else(synth_env):
    local = synth_env("local")
    (subscription,) = [s["Properties"] for s in local.resources("AWS::SNS::Subscription").values()]
    assert (subscription["Protocol"], subscription["Endpoint"]) == ("email", LOCAL_ON_CALL)
    assert subscription["TopicArn"] == _topic(local)
    assert LOCAL_ON_CALL == "on-call@localhost"
    assert not local.resources("AWS::Chatbot::SlackChannelConfiguration")
    assert not local.resources("AWS::Chatbot::MicrosoftTeamsChannelConfiguration")


@pytest.mark.parametrize("name", ["dev", "staging", "prod"])
def test_the_real_environments_ship_paging_nobody_until_their_endpoints_are_written(synth_env, name):
    synthesized = synth_env(name)
    assert synthesized.env.on_call == ()
    assert not synthesized.resources("AWS::SNS::Subscription")
    assert not synthesized.resources("AWS::Chatbot::SlackChannelConfiguration")
    assert not synthesized.resources("AWS::Chatbot::MicrosoftTeamsChannelConfiguration")


def test_email_and_https_endpoints_are_sns_subscriptions_whose_failures_are_kept(paged):
    topic = _topic(paged)
    queue_id = _undelivered_id(paged)
    subscriptions = sorted(
        (s["Properties"] for s in paged.resources("AWS::SNS::Subscription").values()), key=lambda s: s["Protocol"]
    )
    assert [(s["Protocol"], s["Endpoint"], s["TopicArn"]) for s in subscriptions] == [
        ("email", "oncall@example.com", topic),
        ("https", "https://events.pagerduty.com/integration/0123456789abcdef/enqueue", topic),
    ]
    # A page SNS could not deliver goes to a queue of its own, which only this topic may fill
    for subscription in subscriptions:
        assert subscription["RedrivePolicy"] == {"deadLetterTargetArn": {"Fn::GetAtt": [queue_id, "Arn"]}}
    (policy,) = [
        p["Properties"]
        for p in paged.resources("AWS::SQS::QueuePolicy").values()
        if p["Properties"]["Queues"] == [{"Ref": queue_id}]
    ]
    (allowed,) = [s for s in policy["PolicyDocument"]["Statement"] if s["Effect"] == "Allow"]
    assert (allowed["Principal"], allowed["Action"]) == ({"Service": "sns.amazonaws.com"}, "sqs:SendMessage")
    assert allowed["Condition"] == {"ArnEquals": {"aws:SourceArn": topic}}


def test_an_undelivered_page_is_itself_a_page(paged):
    queue_id = _undelivered_id(paged)
    (alarm,) = [
        a["Properties"]
        for a in paged.resources("AWS::CloudWatch::Alarm").values()
        if a["Properties"].get("Dimensions")
        == [{"Name": "QueueName", "Value": {"Fn::GetAtt": [queue_id, "QueueName"]}}]
    ]
    assert (alarm["MetricName"], alarm["Threshold"], alarm["ComparisonOperator"], alarm["EvaluationPeriods"]) == (
        "ApproximateNumberOfMessagesVisible",
        1,
        "GreaterThanOrEqualToThreshold",
        1,
    )
    assert alarm["AlarmActions"] == [_topic(paged)]
    assert "RUNBOOK.md#undelivered-pages" in alarm["AlarmDescription"]
    # And `lanectl plan` prices it
    assert environment_cost(paged.env, 0.25).fixed.alarm_count == len(paged.resources("AWS::CloudWatch::Alarm"))


def test_chat_channels_are_chatbot_configurations_on_the_topic_each_with_a_role_that_only_reads(paged):
    topic = _topic(paged)
    slack = [c["Properties"] for c in paged.resources("AWS::Chatbot::SlackChannelConfiguration").values()]
    teams = [c["Properties"] for c in paged.resources("AWS::Chatbot::MicrosoftTeamsChannelConfiguration").values()]
    assert [(c["SlackWorkspaceId"], c["SlackChannelId"]) for c in slack] == [("T012AB3CD", "C0123ABCD")]
    # Teams' channel id as Chatbot takes it: URL-encoded
    assert [(c["TeamId"], c["TeamsChannelId"], c["TeamsTenantId"]) for c in teams] == [
        (TEAM, "19%3Aa1b2c3%40thread.tacv2", TENANT)
    ]
    roles = set()
    for configuration in (*slack, *teams):
        assert configuration["SnsTopicArns"] == [topic]
        assert configuration["ConfigurationName"].startswith("lanes-prod-")
        (role_id, _) = configuration["IamRoleArn"]["Fn::GetAtt"]
        roles.add(role_id)
        role = paged.resource(role_id)["Properties"]
        assert role["AssumeRolePolicyDocument"]["Statement"] == [
            {"Action": "sts:AssumeRole", "Effect": "Allow", "Principal": {"Service": "chatbot.amazonaws.com"}}
        ]
        assert "ManagedPolicyArns" not in role
        policies = [
            p["Properties"]["PolicyDocument"]["Statement"]
            for p in paged.resources("AWS::IAM::Policy").values()
            if {"Ref": role_id} in p["Properties"]["Roles"]
        ]
        assert policies == [NOTIFICATION_READS]
        # The guardrail (without one, Chatbot's ceiling is AdministratorAccess) is no wider than the role
        (guardrail,) = configuration["GuardrailPolicies"]
        managed = paged.resource(guardrail["Ref"])
        assert managed["Type"] == "AWS::IAM::ManagedPolicy"
        assert managed["Properties"]["PolicyDocument"]["Statement"] == NOTIFICATION_READS
    # A role of its own for each channel, used by nothing else
    assert len(roles) == 2
    function_roles = {
        f["Properties"]["Role"]["Fn::GetAtt"][0] for f in paged.resources("AWS::Lambda::Function").values()
    }
    assert not roles & function_roles


def test_with_every_kind_of_endpoint_the_nag_packs_pass_acknowledging_only_the_unavoidable(paged):
    report = json.loads((Path(paged.outdir) / "validation-report.json").read_text())
    assert report["pluginReports"] == []
    acknowledged = {
        logical_id: {
            rule["id"] for rule in resource.get("Metadata", {}).get("cdk_nag", {}).get("rules_to_suppress", [])
        }
        for logical_id, resource in paged.template["Resources"].items()
        if paged.resource(logical_id)["Type"] in ("AWS::IAM::Policy", "AWS::IAM::ManagedPolicy", "AWS::SQS::Queue")
        and logical_id.startswith("OnCall")
    }
    reads = {
        "AwsSolutions-IAM5[Resource::*]",
        "AwsSolutions-IAM5[Action::cloudwatch:Describe*]",
        "AwsSolutions-IAM5[Action::cloudwatch:Get*]",
        "AwsSolutions-IAM5[Action::cloudwatch:List*]",
    }
    undelivered = _undelivered_id(paged)
    assert acknowledged.pop(undelivered) == {"AwsSolutions-SQS3", "Serverless-SQSRedrivePolicy"}
    assert len(acknowledged) == 4  # each channel's role policy and guardrail
    assert all(rules == reads for rules in acknowledged.values())


def test_with_every_kind_of_endpoint_cfn_lint_finds_no_errors_where_chatbot_is_offered(paged):
    # AWS Chatbot is not offered in the China and GovCloud partitions (the config refuses a channel there)
    offered = [r for r in REGIONS if not r.startswith(("cn-", "us-gov-"))]
    matches = lint(json.dumps(paged.template), config=ManualArgs(include_experimental=True, regions=offered))
    errors = [m for m in matches if m.rule.id.startswith("E")]
    assert errors == [], "\n".join(f"{m.rule.id} {m.message} ({m.path})" for m in errors)
