"""`preflight` on the dependencies the lanes call: each lane's Bedrock model offered in the region
and the account given access, and the Meta access token replies are sent with set.

moto has no Bedrock control plane, so the catalogue is tests/unit/ops/support.py's BedrockCatalogue
(answers validated against botocore's model); the stack and its secrets are moto's."""

from __future__ import annotations

import json
from dataclasses import replace

import boto3
import pytest

from pipeline.settings.callers import ALL_TENANTS
from stacks.config.environments import ENVIRONMENTS, EmailEndpoint
from stacks.config.models import reply_model
from tests.support.aws import REGION

from .support import AVAILABLE, bedrock_error, deploy_stack, publish_public_parameter

REPLY = "anthropic.claude-3-haiku-20240307-v1:0"
TRIAGE = "amazon.nova-micro-v1:0"
TOKEN = "EAAG-s3cr3t-token"


@pytest.fixture
def aws(aws, monkeypatch):
    """dev ready in every other respect: bootstrapped, the Powertools layer published, someone
    granted and paged; so each test's one FAIL is the one it causes."""
    dev = ENVIRONMENTS["dev"]
    publish_public_parameter(
        f"/aws/service/powertools/python/arm64/python3.14/{dev.powertools_version}", "arn:aws:lambda:layer:27"
    )
    boto3.client("ssm", region_name=REGION).put_parameter(
        Name="/cdk-bootstrap/hnb659fds/version", Value="21", Type="String"
    )
    grants = {"arn:aws:iam::123456789012:role/backend": (ALL_TENANTS,)}
    jobs = replace(dev.jobs, settings=replace(dev.jobs.settings, callers=grants))
    ready = replace(dev, jobs=jobs, on_call=(EmailEndpoint("on-call@example.com"),))
    monkeypatch.setitem(ENVIRONMENTS, "dev", ready)
    return aws


def failures(out: str) -> list[str]:
    return [line for line in out.splitlines() if line.startswith("FAIL")]


def test_deployed_with_token_and_models_granted_everything_passes(aws, lanectl, bedrock):
    deploy_stack(ENVIRONMENTS["dev"])

    result = lanectl("preflight", "dev")

    assert result.code == 0, result.out
    lines = result.out.splitlines()
    assert "PASS  meta access token: access_token set for the ai lane(s)" in lines
    assert f"PASS  model ai: {REPLY} is available in us-east-1 and the account has access" in lines
    assert f"PASS  model engagement: {TRIAGE} is available in us-east-1 and the account has access" in lines
    # each model asked its availability, then whether it is callable on demand
    assert sorted(bedrock.asked) == sorted([REPLY, REPLY, TRIAGE, TRIAGE])
    assert TOKEN not in result.out


# The Meta access token


@pytest.mark.parametrize(
    "stored",
    [
        json.dumps({"access_token": "", "unused": "abc"}),  # as the stack creates it, before an operator sets it
        json.dumps({"access_token": "   "}),
        json.dumps({"token": TOKEN}),
        json.dumps({"access_token": 12345}),
    ],
    ids=["as-created", "blank", "wrong-key", "not-a-string"],
)
def test_a_token_not_set_fails_naming_the_key_and_the_runbook_step(aws, lanectl, stored):
    stack = deploy_stack(ENVIRONMENTS["dev"], access_token=stored)
    arn = stack.clients["secretsmanager"].describe_secret(SecretId="lanes-dev-MetaAccessToken")["ARN"]

    result = lanectl("preflight", "dev")

    assert result.code == 1
    assert failures(result.out) == [
        f"FAIL  meta access token: set access_token in {arn} to a system user's token from Meta Business Manager "
        "(docs/RUNBOOK.md, rotating the Meta access token): without it the ai lane(s) send no reply"
    ]
    assert TOKEN not in result.out


@pytest.mark.parametrize("stored", [f"access_token={TOKEN}", json.dumps([TOKEN])], ids=["not-json", "a-list"])
def test_a_token_secret_that_is_not_a_json_object_fails_without_echoing_it(aws, lanectl, stored):
    deploy_stack(ENVIRONMENTS["dev"], access_token=stored)

    result = lanectl("preflight", "dev")

    assert result.code == 1
    [line] = failures(result.out)
    assert line.startswith("FAIL  meta access token: arn:aws:secretsmanager:")
    assert line.endswith(
        'is not a JSON object: set it to {"access_token": "..."} (docs/RUNBOOK.md, rotating the Meta access token)'
    )
    assert TOKEN not in result.out


def test_a_stack_without_the_token_output_fails_asking_for_a_deploy(aws, lanectl):
    deploy_stack(ENVIRONMENTS["dev"], drop_outputs=("MetaAccessTokenArn",))

    result = lanectl("preflight", "dev")

    assert failures(result.out) == [
        "FAIL  meta access token: lanes-dev has no MetaAccessTokenArn output: deploy the stack again"
    ]


def test_a_token_secret_that_cannot_be_read_fails_with_the_reason(aws, lanectl):
    stack = deploy_stack(ENVIRONMENTS["dev"])
    stack.clients["secretsmanager"].delete_secret(SecretId="lanes-dev-MetaAccessToken", ForceDeleteWithoutRecovery=True)

    result = lanectl("preflight", "dev")

    [line] = failures(result.out)
    assert line.startswith("FAIL  meta access token: cannot read arn:aws:secretsmanager:")
    assert "ResourceNotFoundException" in line


def test_an_environment_whose_lanes_send_nothing_skips_the_token(aws, lanectl, monkeypatch):
    dev = ENVIRONMENTS["dev"]
    quiet = tuple(lane for lane in dev.lanes if lane.policy.task != "ai")
    models = tuple(model for model in dev.models if model.lane != "ai")
    monkeypatch.setitem(ENVIRONMENTS, "dev", replace(dev, lanes=quiet, models=models))
    deploy_stack(ENVIRONMENTS["dev"], access_token=json.dumps({"access_token": ""}))

    result = lanectl("preflight", "dev")

    assert "SKIP  meta access token: no lane of dev sends replies" in result.out.splitlines()
    assert result.code == 0, result.out


# The lanes' models


MODEL_ACCESS = "request it on the Bedrock console's Model access page in us-east-1"


@pytest.mark.parametrize(
    ("availability", "problem"),
    [
        (
            {"regionAvailability": "NOT_AVAILABLE"},
            f"{REPLY} is not available in us-east-1: choose a region that offers it, or an inference profile that "
            "routes to one, in stacks/config/models.py (the environment's models in stacks/config/environments.py)",
        ),
        (
            {"agreementAvailability": {"status": "NOT_AVAILABLE"}},
            f"access to {REPLY} is NOT_AVAILABLE: {MODEL_ACCESS}",
        ),
        (
            {"agreementAvailability": {"status": "ERROR", "errorMessage": "use case form rejected"}},
            f"access to {REPLY} is ERROR (use case form rejected): {MODEL_ACCESS}",
        ),
        (
            {"agreementAvailability": {"status": "PENDING"}},
            f"access to {REPLY} was requested and is pending: wait for it, then run preflight again",
        ),
        (
            {"authorizationStatus": "NOT_AUTHORIZED"},
            f"the account is not authorized to use {REPLY} (an IAM or organization policy denies it): ask the "
            "account's administrator to allow it",
        ),
        (
            {"entitlementAvailability": "NOT_AVAILABLE"},
            f"the account is not entitled to {REPLY} in us-east-1: enable it on the Bedrock console's Model "
            "access page",
        ),
    ],
    ids=[
        "not-in-region",
        "access-not-requested",
        "access-refused",
        "access-pending",
        "denied-by-policy",
        "no-entitlement",
    ],
)
def test_a_model_the_account_cannot_call_fails_saying_what_to_do(aws, lanectl, bedrock, availability, problem):
    deploy_stack(ENVIRONMENTS["dev"])
    bedrock.models[REPLY] = {**AVAILABLE, **availability}

    result = lanectl("preflight", "dev")

    assert result.code == 1
    assert failures(result.out) == [f"FAIL  model ai: {problem}"]
    assert result.out.splitlines()[-1] == "1 check(s) failed: do not deploy yet"


def test_a_model_id_bedrock_does_not_know_fails_naming_where_to_fix_it(aws, lanectl, monkeypatch):
    # Given a typo in the environment's model id
    dev = ENVIRONMENTS["dev"]
    typo = "anthropic.claude-3-haiku-2024037-v1:0"
    models = tuple(reply_model(typo) if model.lane == "ai" else model for model in dev.models)
    monkeypatch.setitem(ENVIRONMENTS, "dev", replace(dev, models=models))
    deploy_stack(ENVIRONMENTS["dev"])

    result = lanectl("preflight", "dev")

    assert failures(result.out) == [
        f"FAIL  model ai: Bedrock in us-east-1 does not offer {typo} (ValidationException: The provided model "
        "identifier is invalid.): pick one listed by aws bedrock list-foundation-models --region us-east-1 and set "
        "it in stacks/config/models.py (the environment's models in stacks/config/environments.py)"
    ]


def test_an_inference_profile_is_looked_up_and_its_model_checked(aws, lanectl, bedrock, monkeypatch):
    dev = ENVIRONMENTS["dev"]
    profile = f"us.{REPLY}"
    models = tuple(reply_model(profile) if model.lane == "ai" else model for model in dev.models)
    monkeypatch.setitem(ENVIRONMENTS, "dev", replace(dev, models=models))
    bedrock.profiles[profile] = "ACTIVE"
    deploy_stack(ENVIRONMENTS["dev"])

    result = lanectl("preflight", "dev")

    assert (
        f"PASS  model ai: {REPLY} through inference profile {profile} is available in us-east-1 and the account "
        "has access" in result.out.splitlines()
    )
    assert bedrock.asked[:2] == [profile, REPLY]
    assert result.code == 0, result.out


def test_an_inference_profile_that_does_not_exist_fails_before_its_model_is_asked(aws, lanectl, bedrock, monkeypatch):
    dev = ENVIRONMENTS["dev"]
    profile = f"eu.{REPLY}"
    models = tuple(reply_model(profile) if model.lane == "ai" else model for model in dev.models)
    monkeypatch.setitem(ENVIRONMENTS, "dev", replace(dev, models=models))
    deploy_stack(ENVIRONMENTS["dev"])

    result = lanectl("preflight", "dev")

    assert failures(result.out) == [
        f"FAIL  model ai: inference profile {profile} does not exist in us-east-1 (ResourceNotFoundException: The "
        "specified inference profile does not exist.): pick one listed by aws bedrock list-inference-profiles "
        "--region us-east-1 (its prefix must match the region's geography) and set it in stacks/config/models.py "
        "(the environment's models in stacks/config/environments.py)"
    ]
    assert REPLY not in bedrock.asked


def test_a_model_offered_only_through_inference_profiles_fails_naming_the_regions_profile(aws, lanectl, bedrock):
    # Given the reply model offered in us-east-1 only through inference profiles, us. and eu. ones
    deploy_stack(ENVIRONMENTS["dev"])
    bedrock.models[REPLY] = AVAILABLE
    bedrock.profile_only.add(REPLY)
    bedrock.profiles.update({f"eu.{REPLY}": "ACTIVE", f"us.{REPLY}": "ACTIVE"})

    result = lanectl("preflight", "dev")

    # Then preflight fails naming the profile that routes within the region's geography
    assert failures(result.out) == [
        f"FAIL  model ai: {REPLY} is not offered on demand in us-east-1 (inference types: INFERENCE_PROFILE), so "
        f"every call would fail: set the lane's model_id to the inference profile us.{REPLY} in "
        "stacks/config/models.py (the environment's models in stacks/config/environments.py)"
    ]


def test_a_caller_not_allowed_to_ask_bedrock_fails_naming_the_permissions(aws, lanectl, bedrock):
    deploy_stack(ENVIRONMENTS["dev"])
    denied = bedrock_error("AccessDeniedException", "User is not authorized to perform this action", 403)
    bedrock.models[TRIAGE] = denied

    result = lanectl("preflight", "dev")

    assert failures(result.out) == [
        f"FAIL  model engagement: cannot check {TRIAGE}: AccessDeniedException: User is not authorized to perform "
        "this action. Run preflight as a principal allowed bedrock:GetFoundationModelAvailability, "
        "bedrock:GetFoundationModel, bedrock:GetInferenceProfile and bedrock:ListInferenceProfiles"
    ]


def test_the_models_are_checked_in_the_target_region(aws, lanectl, bedrock):
    result = lanectl("preflight", "dev", "--region", "eu-west-1")

    assert f"PASS  model ai: {REPLY} is available in eu-west-1 and the account has access" in result.out.splitlines()


def test_an_environment_calling_no_model_skips_the_check(aws, lanectl, bedrock, monkeypatch):
    monkeypatch.setitem(ENVIRONMENTS, "dev", replace(ENVIRONMENTS["dev"], models=()))

    result = lanectl("preflight", "dev")

    assert "SKIP  models: no lane of dev calls a model" in result.out.splitlines()
    assert bedrock.asked == []


def test_against_an_emulator_the_models_are_skipped_not_failed(lanectl, emulator_endpoint, bedrock):
    result = lanectl("preflight", "--env", "local", "--endpoint-url", emulator_endpoint)

    skipped = f"{emulator_endpoint} is an emulator, which serves Converse but not Bedrock's model catalogue"
    assert f"SKIP  model ai: {skipped}" in result.out.splitlines()
    assert bedrock.asked == []
