from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest

from stacks.app_builder import build_app
from stacks.config.environments import ENVIRONMENTS, Environment
from stacks.pipeline_stack import PipelineStack
from stacks.runtime_env import stack_name

ENV_NAMES = sorted(ENVIRONMENTS)


@dataclass(frozen=True)
class Synthesized:
    env: Environment
    stack: PipelineStack
    template: dict[str, Any]
    outdir: str

    def resources(self, resource_type: str) -> dict[str, dict[str, Any]]:
        return {k: v for k, v in self.template["Resources"].items() if v["Type"] == resource_type}

    def resource(self, logical_id: str) -> dict[str, Any]:
        return self.template["Resources"][logical_id]


_CACHE: dict[str, Synthesized] = {}


def synthesize(name: str, tmp_root) -> Synthesized:
    """Synthesize one environment with cdk-nag enforcing (an unacknowledged finding fails synth)."""
    if name not in _CACHE:
        env = ENVIRONMENTS[name]
        outdir = str(tmp_root / f"cdk.out-{name}")
        app, stack = build_app(env, outdir=outdir)
        assembly = app.synth()
        template = assembly.get_stack_by_name(stack_name(env)).template
        _CACHE[name] = Synthesized(env=env, stack=stack, template=template, outdir=outdir)
    return _CACHE[name]


@pytest.fixture(scope="session")
def synth_root(tmp_path_factory):
    return tmp_path_factory.mktemp("synth")


@pytest.fixture(params=ENV_NAMES)
def synthesized(request, synth_root) -> Synthesized:
    return synthesize(request.param, synth_root)


@pytest.fixture
def synth_env(synth_root):
    def get(name: str) -> Synthesized:
        return synthesize(name, synth_root)

    return get
