"""`preflight`: credentials, CDK bootstrap, the account's concurrency, the Meta secret.

The lanes' models and the Meta access token: test_preflight_dependencies.py."""

from __future__ import annotations

from dataclasses import replace

import boto3
import pytest
from botocore.stub import Stubber

from pipeline.settings.callers import ALL_TENANTS
from stacks.config.environments import ENVIRONMENTS, EmailEndpoint, HttpsEndpoint, SlackChannel
from stacks.config.lambda_runtime import powertools_parameter
from tests.support.aws import REGION

from .support import StubbedAws, deploy_stack, publish_public_parameter


def _bootstrap(version="21"):
    boto3.client("ssm", region_name=REGION).put_parameter(
        Name="/cdk-bootstrap/hnb659fds/version", Value=version, Type="String"
    )


def _lambda(quota, unreserved, held=0, functions=6):
    client = boto3.client("lambda", region_name=REGION)
    stubber = Stubber(client)
    stubber.add_response(
        "get_account_settings",
        {"AccountLimit": {"ConcurrentExecutions": quota, "UnreservedConcurrentExecutions": unreserved}},
    )
    for n in range(functions):
        stubber.add_response("get_function_concurrency", {"ReservedConcurrentExecutions": held if n == 0 else 0})
    stubber.activate()
    return lambda target: StubbedAws(target, {"lambda": client})


LAYER_ARN = "arn:aws:lambda:us-east-1:017000801446:layer:AWSLambdaPowertoolsPythonV3-python314-arm64:27"


@pytest.fixture
def aws(aws):
    """The test region as AWS keeps it: Powertools' layer published for the pinned version."""
    publish_public_parameter(
        f"/aws/service/powertools/python/arm64/python3.14/{ENVIRONMENTS['prod'].powertools_version}", LAYER_ARN
    )
    return aws


PROD = ENVIRONMENTS["prod"]
# the lanes, the jobs API, the sweeper's one and the lane probe's one
RESERVES = PROD.reserved_total + PROD.jobs_reservation + 2
PRODUCER_ROLE = "arn:aws:iam::123456789012:role/backend"


ON_CALL = EmailEndpoint("on-call@example.com")


@pytest.fixture(autouse=True)
def granted(monkeypatch):
    """dev and prod as their operators would have them: the producer's role granted its tenants
    and someone to page (the repository's config grants none and pages nobody, so that nothing is
    open, or deployed silent, until someone says who)."""
    for name in ("dev", "prod"):
        env = ENVIRONMENTS[name]
        jobs = replace(env.jobs, settings=replace(env.jobs.settings, callers={PRODUCER_ROLE: (ALL_TENANTS,)}))
        monkeypatch.setitem(ENVIRONMENTS, name, replace(env, jobs=jobs, on_call=(ON_CALL,)))


def test_everything_ready(prod_stack, lanectl):
    _bootstrap()

    result = lanectl("preflight", "prod", aws=_lambda(quota=1000, unreserved=1000))

    assert result.code == 0, result.out
    lines = result.out.splitlines()
    assert lines[0] == "preflight for prod (us-east-1)"
    assert lines[1].startswith("PASS  credentials: account 123456789012 as arn:aws:sts::123456789012:user/moto")
    assert lines[2] == f"PASS  jobs callers: {PRODUCER_ROLE} (all tenants)"
    assert lines[3] == "PASS  on-call: email on-call@example.com"
    assert lines[4] == "PASS  cdk bootstrap: version 21"
    assert (
        lines[5]
        == f"PASS  powertools layer: {PROD.powertools_version} for python3.14 on arm64 in us-east-1: {LAYER_ARN}"
    )
    assert lines[6] == (
        f"PASS  concurrency: prod reserves {RESERVES} (already holding 0); the account has 1000 unreserved "
        "of 1000 and Lambda keeps 100"
    )
    assert lines[7] == "PASS  meta secret: app_secret, verify_token set"
    assert lines[8] == "PASS  meta access token: access_token set for the ai lane(s)"
    assert lines[9] == (
        "PASS  model ai: anthropic.claude-3-haiku-20240307-v1:0 is available in us-east-1 and the account has access"
    )
    assert (
        lines[10]
        == "PASS  model engagement: amazon.nova-micro-v1:0 is available in us-east-1 and the account has access"
    )
    assert lines[11] == "SKIP  mutual tls: off in prod"
    assert lines[12] == "PASS  on-call subscriptions: 1 endpoint(s) subscribed and confirmed"
    assert lines[13] == "SKIP  chat channels: prod pages no Slack or Teams channel"
    assert lines[14] == (
        "PASS  webhook url: give Meta https://api.example.test/webhooks/meta (prod's webhook door is the HTTP "
        "API's route)"
    )
    assert lines[15] == "ready to deploy"
    assert "s3cr3t" not in result.out


def test_redeploying_counts_what_the_stack_already_reserves(prod_stack, lanectl):
    # Given an account whose unreserved pool already excludes what this stack reserves
    _bootstrap()

    result = lanectl("preflight", "prod", aws=_lambda(quota=1000, unreserved=1000 - RESERVES, held=RESERVES))

    assert result.code == 0
    assert (
        f"PASS  concurrency: prod reserves {RESERVES} (already holding {RESERVES}); the account has "
        f"{1000 - RESERVES} unreserved" in result.out
    )


def test_a_new_accounts_quota_fails_the_reservations(prod_stack, lanectl):
    _bootstrap()

    result = lanectl("preflight", "--env", "prod", aws=_lambda(quota=10, unreserved=10))

    assert result.code == 1
    assert (
        f"FAIL  concurrency: prod reserves {RESERVES} (already holding 0); the account has 10 unreserved of 10 "
        f"and Lambda keeps 100: short by {RESERVES + 100 - 10}." in result.out
    )
    assert result.out.splitlines()[-1] == "1 check(s) failed: do not deploy yet"


def test_missing_bootstrap_fails_with_the_command_to_run(aws, lanectl):
    result = lanectl("preflight", "dev")

    assert result.code == 1
    assert (
        "FAIL  cdk bootstrap: us-east-1 is not bootstrapped; run: npx cdk bootstrap aws://123456789012/us-east-1"
        in result.out
    )


def test_old_bootstrap_fails(aws, lanectl):
    _bootstrap("4")

    assert "FAIL  cdk bootstrap: bootstrap version 4 is older than 6" in lanectl("preflight", "dev").out


def test_before_the_first_deploy_the_secret_is_skipped(aws, lanectl):
    _bootstrap()

    result = lanectl("preflight", "dev")

    # moto cannot report account settings, so that check is skipped rather than guessed
    assert "SKIP  concurrency: cannot read the account's Lambda settings" in result.out
    assert "SKIP  meta secret: lanes-dev is not deployed yet; set the secret after the first deploy" in result.out
    assert "SKIP  meta access token: lanes-dev is not deployed yet; set the token after the first deploy" in result.out
    assert result.code == 0


def test_incomplete_secret_fails_naming_the_key_not_the_value(aws, lanectl):
    _bootstrap()
    deploy_stack(ENVIRONMENTS["dev"], secret={"app_secret": "hunter2", "verify_token": ""})

    result = lanectl("preflight", "dev")

    assert result.code == 1
    assert "FAIL  meta secret: set verify_token in arn:aws:secretsmanager:" in result.out
    assert "hunter2" not in result.out


def test_a_previous_secret_without_its_expiry_fails_naming_the_field_not_the_values(aws, lanectl):
    # Given an operator mid-rotation who kept the old secret but gave it no date
    _bootstrap()
    secret = {"app_secret": "new-one", "previous_app_secret": "old-one", "verify_token": "t"}
    deploy_stack(ENVIRONMENTS["dev"], secret=secret)

    result = lanectl("preflight", "dev")

    # Then the deploy is stopped before the door would refuse every delivery as misconfigured
    assert result.code == 1
    assert "FAIL  meta secret: the Meta secret has previous_app_secret but no previous_expires_at" in result.out
    assert "new-one" not in result.out
    assert "old-one" not in result.out


def test_no_credentials_fails_and_skips_the_rest(monkeypatch, tmp_path, lanectl):
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    monkeypatch.setenv("AWS_REGION", REGION)

    result = lanectl("preflight", "prod")

    assert result.code == 1
    assert result.out.splitlines()[1:] == [
        "FAIL  credentials: no AWS credentials found (set AWS_PROFILE or pass --profile)",
        f"PASS  jobs callers: {PRODUCER_ROLE} (all tenants)",
        "PASS  on-call: email on-call@example.com",
        "SKIP  cdk bootstrap: needs credentials",
        "SKIP  powertools layer: needs credentials",
        "SKIP  concurrency: needs credentials",
        "SKIP  meta secret: needs credentials",
        "SKIP  meta access token: needs credentials",
        "SKIP  model ai: needs credentials",
        "SKIP  model engagement: needs credentials",
        "SKIP  mutual tls: needs credentials",
        "SKIP  on-call subscriptions: needs credentials",
        "SKIP  chat channels: needs credentials",
        "SKIP  webhook url: needs credentials",
        "1 check(s) failed: do not deploy yet",
    ]


def test_an_environment_pinned_to_another_account(aws, lanectl, monkeypatch):
    monkeypatch.setitem(ENVIRONMENTS, "staging", replace(ENVIRONMENTS["staging"], account="210987654321"))

    result = lanectl("preflight", "staging")

    assert result.code == 1
    assert "FAIL  credentials: signed in to account 123456789012, but staging is pinned to 210987654321" in result.out


def test_an_environment_granting_no_caller_fails_before_the_jobs_api_refuses_everyone(aws, lanectl, monkeypatch):
    _bootstrap()
    env = ENVIRONMENTS["dev"]
    monkeypatch.setitem(
        ENVIRONMENTS, "dev", replace(env, jobs=replace(env.jobs, settings=replace(env.jobs.settings, callers={})))
    )

    result = lanectl("preflight", "dev")

    assert result.code == 1
    assert (
        "FAIL  jobs callers: no IAM principal is granted a tenant in dev (JobsConfig.settings.callers in "
        "stacks/config/environments.py): the jobs API would refuse every request with 403" in result.out
    )


def test_an_environment_paging_nobody_is_refused_naming_where_to_add_someone(aws, lanectl):
    # Given staging as the repository ships it: no on-call endpoint at all
    _bootstrap()
    assert ENVIRONMENTS["staging"].on_call == ()

    result = lanectl("preflight", "staging")

    # Then the deploy is stopped before a stack whose alarms reach no one exists
    assert result.code == 1
    assert (
        "FAIL  on-call: staging pages nobody: add an email address, an HTTPS endpoint or a Slack or Teams channel "
        "to its on_call in stacks/config/environments.py, or every alarm reaches no one" in result.out.splitlines()
    )
    assert result.out.splitlines()[-1].endswith("check(s) failed: do not deploy yet")


def test_every_on_call_endpoint_is_named_without_an_integration_key(aws, lanectl, monkeypatch):
    _bootstrap()
    endpoints = (
        ON_CALL,
        HttpsEndpoint("https://events.pagerduty.com/integration/0123456789abcdef/enqueue"),
        SlackChannel(workspace_id="T012AB3CD", channel_id="C0123ABCD"),
    )
    monkeypatch.setitem(ENVIRONMENTS, "dev", replace(ENVIRONMENTS["dev"], on_call=endpoints))

    result = lanectl("preflight", "dev")

    assert (
        "PASS  on-call: email on-call@example.com; https events.pagerduty.com; "
        "slack channel C0123ABCD in workspace T012AB3CD" in result.out.splitlines()
    )
    assert "0123456789abcdef" not in result.out


def test_a_powertools_version_not_published_for_the_runtime_fails_with_what_to_do(aws, lanectl, monkeypatch):
    # Given dev pinned to a Powertools version AWS has no layer of for python3.14 on arm64
    _bootstrap()
    monkeypatch.setitem(ENVIRONMENTS, "dev", replace(ENVIRONMENTS["dev"], powertools_version="3.0.99"))

    result = lanectl("preflight", "dev")

    # Then the deploy is stopped before CloudFormation fails resolving the layer, saying what to do
    assert result.code == 1
    assert (
        "FAIL  powertools layer: Powertools 3.0.99 is not published for python3.14 on arm64 in us-east-1 "
        "(/aws/service/powertools/python/arm64/python3.14/3.0.99 does not exist), so the deploy would fail "
        "resolving it. Pick a published version: aws ssm get-parameters-by-path --path "
        "/aws/service/powertools/python/arm64/python3.14 --region us-east-1 --query 'Parameters[].Name' "
        "--output text, and set powertools_version in stacks/config/environments.py" in result.out.splitlines()
    )


def test_the_layer_is_looked_up_in_the_target_region(aws, lanectl):
    # Given the pinned version published in us-east-1 only
    _bootstrap()

    result = lanectl("preflight", "dev", "--region", "eu-west-1")

    assert result.code == 1
    assert "FAIL  powertools layer: Powertools " in result.out
    assert " on arm64 in eu-west-1 (" in result.out


def test_the_layer_parameter_preflight_reads_is_the_one_the_stack_resolves():
    from stacks.constructs.function import RUNTIME

    assert powertools_parameter(PROD.powertools_version) == (
        f"/aws/service/powertools/python/arm64/{RUNTIME.name}/{PROD.powertools_version}"
    )


def test_against_an_emulator_the_layer_is_not_looked_up(lanectl, emulator_endpoint):
    # Given an emulator, which holds none of AWS's public parameters (as `lanectl local` serves one)
    endpoint = emulator_endpoint
    result = lanectl("preflight", "--env", "local", "--endpoint-url", endpoint)

    assert f"SKIP  powertools layer: {endpoint} is an emulator, which holds none of AWS's public parameters" in (
        result.out.splitlines()
    )


# Who the alarms reach once deployed


def _pending_sns(topic: str, confirmed: list[tuple[str, str]], pending: list[tuple[str, str]]):
    """SNS's answer for the topic, as AWS gives it: an unconfirmed subscription has no ARN yet
    (moto confirms every subscription at once)."""
    client = boto3.client("sns", region_name=REGION)
    stubber = Stubber(client)
    subscriptions = [
        {"SubscriptionArn": f"{topic}:{n}", "Protocol": p, "Endpoint": e, "TopicArn": topic, "Owner": "123456789012"}
        for n, (p, e) in enumerate(confirmed)
    ] + [
        {"SubscriptionArn": "PendingConfirmation", "Protocol": p, "Endpoint": e, "TopicArn": topic, "Owner": "1"}
        for p, e in pending
    ]
    stubber.add_response("list_subscriptions_by_topic", {"Subscriptions": subscriptions}, {"TopicArn": topic})
    stubber.activate()
    return client


def test_after_the_deploy_an_endpoint_that_never_confirmed_is_reported(aws, lanectl, monkeypatch):
    # Given dev deployed, paging an address that confirmed and a PagerDuty URL that did not
    _bootstrap()
    pager = HttpsEndpoint("https://events.pagerduty.com/integration/0123456789abcdef/enqueue")
    monkeypatch.setitem(ENVIRONMENTS, "dev", replace(ENVIRONMENTS["dev"], on_call=(ON_CALL, pager)))
    deploy_stack(ENVIRONMENTS["dev"])
    topic = boto3.client("cloudformation", region_name=REGION).describe_stacks(StackName="lanes-dev")["Stacks"][0]
    topic_arn = next(o["OutputValue"] for o in topic["Outputs"] if o["OutputKey"] == "AlarmTopicArn")
    sns = _pending_sns(topic_arn, [("email", ON_CALL.address)], [("https", pager.url)])

    result = lanectl("preflight", "dev", aws=lambda target: StubbedAws(target, {"sns": sns}))

    # Then preflight fails naming it (by host only) and what to do
    assert result.code == 1
    assert (
        "FAIL  on-call subscriptions: https events.pagerduty.com has not confirmed its subscription (confirm it at "
        "the service); it is paged nothing" in result.out.splitlines()
    )
    assert "0123456789abcdef" not in result.out


def test_a_chat_workspace_chatbot_was_never_authorised_for_is_reported(aws, lanectl, monkeypatch):
    # Given dev paging a Slack channel in a workspace Chatbot knows and one in a workspace it does not
    _bootstrap()
    known = SlackChannel(workspace_id="T012AB3CD", channel_id="C0123ABCD")
    unknown = SlackChannel(workspace_id="T999ZZ9ZZ", channel_id="C0999ZZZZ")
    monkeypatch.setitem(ENVIRONMENTS, "dev", replace(ENVIRONMENTS["dev"], on_call=(ON_CALL, known, unknown)))
    chatbot = boto3.client("chatbot", region_name=REGION)
    stubber = Stubber(chatbot)
    stubber.add_response(
        "describe_slack_workspaces", {"SlackWorkspaces": [{"SlackTeamId": "T012AB3CD", "SlackTeamName": "shop"}]}
    )
    stubber.activate()

    result = lanectl("preflight", "dev", aws=lambda target: StubbedAws(target, {"chatbot": chatbot}))

    assert result.code == 1
    assert (
        "FAIL  chat channels: AWS Chatbot is not authorised for Slack workspace T999ZZ9ZZ in this account: authorise "
        "each once in the Chatbot console (https://console.aws.amazon.com/chatbot/, configure a client), or the "
        "deploy fails creating its channel" in result.out.splitlines()
    )


def test_a_function_url_door_reserves_where_reservations_are_off_and_preflight_says_which_url_to_give_meta(
    aws, lanectl, monkeypatch
):
    # Given dev, which reserves nothing for its lanes but takes the webhook's function URL door,
    # before its first deploy
    _bootstrap()
    dev = ENVIRONMENTS["dev"]
    monkeypatch.setitem(ENVIRONMENTS, "dev", replace(dev, on_call=(ON_CALL,)))
    assert not dev.reserved_concurrency

    result = lanectl("preflight", "dev", aws=_lambda(quota=1000, unreserved=1000, functions=0))

    # Then its door's reservation is checked against the account, and Meta's URL waits for the deploy
    assert (
        f"PASS  concurrency: dev reserves {dev.webhook_reservation} (already holding 0); the account has 1000 "
        "unreserved of 1000 and Lambda keeps 100"
    ) in result.out
    assert "SKIP  webhook url: lanes-dev is not deployed yet; after the deploy, give Meta its WebhookUrl output" in (
        result.out
    )
