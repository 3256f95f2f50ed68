"""Synthesis refuses a function environment Lambda would refuse, naming the function and its size;
and what each function carries leaves prod room to grow (stacks/environment_size.py)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from stacks.app_builder import build_app
from stacks.config.environments import ENVIRONMENTS
from stacks.config.models import reply_model

pytestmark = pytest.mark.xdist_group("synth")


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
