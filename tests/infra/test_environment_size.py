"""Synthesis refuses a function environment Lambda would refuse, naming the function and its size;
and what each function carries leaves prod room to grow (stacks/environment_size.py)."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from stacks.app_builder import build_app
from stacks.config.environments import ENVIRONMENTS
from stacks.config.models import reply_model
from stacks.runtime_env import stack_name
from tests.infra.conftest import Synthesized
from tests.infra.test_compute import environment_bytes

pytestmark = pytest.mark.xdist_group("synth")


def _synthesized(env, tmp_path) -> Synthesized:
    app, stack = build_app(env, outdir=str(tmp_path / "cdk.out"), nag=False)
    template = app.synth().get_stack_by_name(stack_name(env)).template
    return Synthesized(env=env, stack=stack, template=template, outdir=str(tmp_path))


def test_an_environment_past_lambdas_limit_fails_synthesis_naming_the_function_and_its_size(tmp_path):
    # Given prod's reply lane with a system prompt of 4,000 characters (its consumer's MODEL_SETTINGS)
    prod = ENVIRONMENTS["prod"]
    long_prompt = reply_model()
    long_prompt = replace(long_prompt, settings=replace(long_prompt.settings, system_prompt="Be kind. " * 445))
    env = replace(prod, models=tuple(long_prompt if m.lane == "ai" else m for m in prod.models))
    app, _ = build_app(env, outdir=str(tmp_path / "cdk.out"), nag=False)

    # When it is synthesized, then synthesis fails before any deploy, naming the function, its size
    # as Lambda counts it, and the variable that made it so
    with pytest.raises(RuntimeError) as failed:
        app.synth()
    message = str(failed.value)
    assert "function lanes-prod/AiLane/Consumer" in message
    assert "over Lambda's 4096, so the deploy would fail" in message
    assert "largest variables: MODEL_SETTINGS 4" in message
    assert "lanes-prod/Ingress" not in message


def test_prod_with_ten_lanes_and_two_hundred_one_tenant_callers_fits_with_room_to_spare(tmp_path):
    # Given prod with its lanes doubled to ten and 200 producers, each granted one tenant
    prod = ENVIRONMENTS["prod"]
    untimed = [lane for lane in prod.lanes if lane.tick is None]
    extra = tuple(
        replace(lane, policy=replace(lane.policy, name=name))
        for lane, suffix in [*((lane, "b") for lane in untimed), (untimed[-1], "c")]
        for name in [f"{lane.name}-{suffix}"]
    )
    callers = {f"arn:aws:iam::210987654321:role/producer-{n:03d}": (f"tenant-{n:03d}",) for n in range(200)}
    env = replace(
        prod,
        lanes=prod.lanes + extra,
        jobs=replace(prod.jobs, settings=replace(prod.jobs.settings, callers=callers)),
    )
    assert len(env.lanes) == 10

    # When it is synthesized, then it synthesizes, every function keeps a quarter of Lambda's 4 KB
    # free, and the callers are in their secret, whole
    synthesized = _synthesized(env, tmp_path)
    sizes = environment_bytes(synthesized)
    assert max(sizes.values()) <= 3072, sizes
    (secret,) = [
        r["Properties"]
        for r in synthesized.resources("AWS::SecretsManager::Secret").values()
        if "callers" in r["Properties"].get("Description", "")
    ]
    assert json.loads(secret["SecretString"]) == {principal: list(tenants) for principal, tenants in callers.items()}
