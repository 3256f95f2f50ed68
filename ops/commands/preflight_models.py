"""Preflight for the lanes' Bedrock models: offered in the target region and usable by the account.

A model the account has no access to deploys cleanly and then stops its lane at the first turn, so
this is checked before the deploy, one line per lane that calls a model. Bedrock's own answer
(GetFoundationModelAvailability) covers the region, the account's authorization, the model's
agreement (the console's "Model access") and the entitlement; an inference profile is looked up
first (GetInferenceProfile), and its model checked the same way. A model named by its own id must be
callable on demand in the region (GetFoundationModel's inferenceTypesSupported): one Bedrock offers
only through inference profiles answers every call with a ValidationException, which pauses its
lane, so preflight fails instead and names the region's profile for it (ListInferenceProfiles).
"""

from __future__ import annotations

from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from ops.aws import describe_error
from ops.commands.preflight_result import FAIL, PASS, SKIP, Result
from ops.context import Context
from stacks.config.models import LaneModel

WHERE_MODELS_ARE_SET = "stacks/config/models.py (the environment's models in stacks/config/environments.py)"
_UNKNOWN = ("ResourceNotFoundException", "ValidationException")


def check_models(ctx: Context) -> list[Result]:
    if not ctx.env.models:
        return [Result(SKIP, "models", f"no lane of {ctx.env.name} calls a model")]
    if ctx.target.endpoint_url:
        reason = f"{ctx.target.endpoint_url} is an emulator, which serves Converse but not Bedrock's model catalogue"
        return [Result(SKIP, _name(model), reason) for model in ctx.env.models]
    return [check_model(ctx, model) for model in ctx.env.models]


def _name(model: LaneModel) -> str:
    return f"model {model.lane}"


def _list_hint(region: str, kind: str) -> str:
    return f"aws bedrock list-{kind} --region {region}"


def check_model(ctx: Context, model: LaneModel) -> Result:
    name = _name(model)
    region = ctx.target.region
    client = ctx.aws.client("bedrock")
    model_id = model.settings.model_id
    if model.inference_profile:
        problem = _profile_problem(client, model_id, region)
        if problem:
            return Result(FAIL, name, problem)
    foundation = model.foundation_model
    try:
        answer = client.get_foundation_model_availability(modelId=foundation)
    except ClientError as exc:
        code = exc.response.get("Error", {}).get("Code")
        if code in _UNKNOWN:
            return Result(
                FAIL,
                name,
                f"Bedrock in {region} does not offer {foundation} ({describe_error(exc)}): pick one listed by "
                f"{_list_hint(region, 'foundation-models')} and set it in {WHERE_MODELS_ARE_SET}",
            )
        return Result(FAIL, name, _cannot_check(foundation, exc))
    except BotoCoreError as exc:
        return Result(FAIL, name, _cannot_check(foundation, exc))
    problems = _availability_problems(answer, foundation, region)
    if not model.inference_profile:
        on_demand = _on_demand_problem(client, foundation, region)
        if on_demand:
            problems.append(on_demand)
    if problems:
        return Result(FAIL, name, "; ".join(problems))
    via = f" through inference profile {model_id}" if model.inference_profile else ""
    return Result(PASS, name, f"{foundation}{via} is available in {region} and the account has access")


def _cannot_check(model_id: str, exc: Exception) -> str:
    return (
        f"cannot check {model_id}: {describe_error(exc)}. Run preflight as a principal allowed "
        "bedrock:GetFoundationModelAvailability, bedrock:GetFoundationModel, bedrock:GetInferenceProfile "
        "and bedrock:ListInferenceProfiles"
    )


ON_DEMAND = "ON_DEMAND"
_GEOGRAPHY = (("us-gov-", "us-gov."), ("us-", "us."), ("eu-", "eu."), ("ap-", "apac."), ("ca-", "ca."))
"""A region's geography, as the prefix of the system-defined inference profiles that route within it."""


def _on_demand_problem(client: Any, model_id: str, region: str) -> str | None:
    """Why the model cannot be called by its own id in the region, naming the profile to use."""
    try:
        details = client.get_foundation_model(modelIdentifier=model_id)["modelDetails"]
        types = details.get("inferenceTypesSupported") or []
        if ON_DEMAND in types:
            return None
        profiles = _profiles_of(client, model_id)
    except (BotoCoreError, ClientError) as exc:
        return _cannot_check(model_id, exc)
    offered = ", ".join(types) or "none"
    problem = f"{model_id} is not offered on demand in {region} (inference types: {offered}), so every call would fail"
    prefix = next((p for start, p in _GEOGRAPHY if region.startswith(start)), None)
    ranked = sorted(profiles, key=lambda p: (not (prefix and p.startswith(prefix)), not p.startswith("global."), p))
    if not ranked:
        return (
            f"{problem}, and no inference profile in {region} routes to it: pick another model listed by "
            f"{_list_hint(region, 'foundation-models')} --by-inference-type ON_DEMAND, in {WHERE_MODELS_ARE_SET}"
        )
    return f"{problem}: set the lane's model_id to the inference profile {ranked[0]} in {WHERE_MODELS_ARE_SET}"


def _profiles_of(client: Any, model_id: str) -> list[str]:
    """The system-defined inference profiles that route to the model (in any of their regions)."""
    found = []
    for page in client.get_paginator("list_inference_profiles").paginate(typeEquals="SYSTEM_DEFINED"):
        for profile in page.get("inferenceProfileSummaries") or []:
            routed = {str(m.get("modelArn", "")).rsplit("/", 1)[-1] for m in profile.get("models") or []}
            if model_id in routed:
                found.append(profile["inferenceProfileId"])
    return found


def _profile_problem(client: Any, profile_id: str, region: str) -> str | None:
    try:
        profile = client.get_inference_profile(inferenceProfileIdentifier=profile_id)
    except ClientError as exc:
        if exc.response.get("Error", {}).get("Code") in _UNKNOWN:
            return (
                f"inference profile {profile_id} does not exist in {region} ({describe_error(exc)}): pick one "
                f"listed by {_list_hint(region, 'inference-profiles')} (its prefix must match the region's "
                f"geography) and set it in {WHERE_MODELS_ARE_SET}"
            )
        return _cannot_check(profile_id, exc)
    except BotoCoreError as exc:
        return _cannot_check(profile_id, exc)
    status = profile.get("status")
    if status != "ACTIVE":
        return f"inference profile {profile_id} is {status}, not ACTIVE"
    return None


def _availability_problems(answer: dict[str, Any], model_id: str, region: str) -> list[str]:
    problems = []
    if answer.get("regionAvailability") != "AVAILABLE":
        problems.append(
            f"{model_id} is not available in {region}: choose a region that offers it, or an inference profile "
            f"that routes to one, in {WHERE_MODELS_ARE_SET}"
        )
    if answer.get("authorizationStatus") != "AUTHORIZED":
        problems.append(
            f"the account is not authorized to use {model_id} (an IAM or organization policy denies it): "
            "ask the account's administrator to allow it"
        )
    agreement = answer.get("agreementAvailability") or {}
    agreement_status = agreement.get("status")
    if agreement_status == "PENDING":
        problems.append(f"access to {model_id} was requested and is pending: wait for it, then run preflight again")
    elif agreement_status != "AVAILABLE":
        why = f" ({agreement['errorMessage']})" if agreement.get("errorMessage") else ""
        problems.append(
            f"access to {model_id} is {agreement_status or 'not reported'}{why}: request it on the Bedrock "
            f"console's Model access page in {region}"
        )
    if answer.get("entitlementAvailability") != "AVAILABLE":
        problems.append(
            f"the account is not entitled to {model_id} in {region}: enable it on the Bedrock console's "
            "Model access page"
        )
    return problems
