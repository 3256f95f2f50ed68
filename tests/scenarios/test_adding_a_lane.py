"""docs/ADDING_A_LANE.md, built exactly as written: its code blocks are read out of the guide (by
the `<!-- example: NAME -->` mark above each), put where the guide says (a copy of the catalogue,
the task registry, the task's grants, the local environment's budgets and models), the stack is
synthesized with the extra lane, and the guide's own tests run its job on the local runtime. A
guide that no longer fits the code fails here."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import textwrap
import types
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from local_aws.synth import SynthesizedApp
from ops.cost.model_cost import model_warnings
from ops.cost.plan_checks import dependency_lines, lane_warnings, plan_lane
from ops.drive.host import Harness
from stacks.config import environments, lanes, models
from stacks.runtime_env import stack_name

pytestmark = [pytest.mark.xdist_group("scenarios"), pytest.mark.slow]

GUIDE = Path(__file__).resolve().parents[2] / "docs" / "ADDING_A_LANE.md"
EXAMPLE = re.compile(r"<!-- example: ([a-z-]+) -->\n```python\n(.*?)```", re.DOTALL)
STEPS = ("lane-names", "catalogue-entry", "task-module", "task-registry", "lane-model", "environment", "task-access")


def examples(text: str) -> dict[str, str]:
    found: dict[str, str] = {}
    for name, code in EXAMPLE.findall(text):
        if name in found:
            raise AssertionError(f"{GUIDE.name} marks two blocks {name!r}")
        found[name] = code
    return found


def _run(code: str, namespace: dict[str, Any], step: str) -> None:
    exec(compile(code, f"{GUIDE.name}#{step}", "exec"), namespace)


def _value(code: str, namespace: dict[str, Any], step: str, wrap: str = "({})") -> Any:
    """A block that is part of an expression in its file (a tuple's entry, a dict's item, keyword
    arguments), evaluated as that expression."""
    body = textwrap.dedent(code).strip().rstrip(",")
    return eval(compile(wrap.format(body), f"{GUIDE.name}#{step}", "eval"), namespace)


class Example:
    """The guide's lane, task, registry entry, grants, model and environment, as objects."""

    def __init__(self, blocks: dict[str, str]) -> None:
        names: dict[str, Any] = dict(vars(lanes))
        _run(blocks["lane-names"], names, "lane-names")
        self.lane_name = names["LISTINGS"]
        self.dependency = names["COPYWRITER_DEPENDENCY"]
        self.lane = _value(blocks["catalogue-entry"], names, "catalogue-entry")

        self.task_module = types.ModuleType("pipeline.tasks.listings")
        _run(blocks["task-module"], self.task_module.__dict__, "task-module")
        self.tasks = _value(blocks["task-registry"], {"listings": self.task_module}, "task-registry", "{{{}}}")

        from stacks.constructs import consumer_grants

        self.access = _value(blocks["task-access"], dict(vars(consumer_grants)), "task-access", "{{{}}}")

        model_names: dict[str, Any] = {**vars(models), "LISTINGS": self.lane_name}
        _run(blocks["lane-model"], model_names, "lane-model")
        env_names = {
            **vars(environments),
            "COPYWRITER_DEPENDENCY": self.dependency,
            "listing_model": model_names["listing_model"],
        }
        changes = _value(blocks["environment"], env_names, "environment", "dict({})")
        local = environments.ENVIRONMENTS["local"]
        # The catalogue with the guide's entry at its end, as the local environment takes it.
        self.env = replace(local, lanes=(*local.lanes, self.lane), **changes)


@pytest.fixture(scope="module")
def blocks() -> dict[str, str]:
    return examples(GUIDE.read_text())


@pytest.fixture(scope="module")
def example(blocks) -> Example:
    return Example(blocks)


@pytest.fixture
def registered(example, monkeypatch) -> Example:
    """The task and its grants where the guide puts them: the registry the consumer looks tasks up
    in, TASK_ACCESS, and the task module importable by its name."""
    from pipeline.handlers import consumer
    from stacks.constructs import consumer_grants

    monkeypatch.setitem(sys.modules, example.task_module.__name__, example.task_module)
    for task, access in example.access.items():
        monkeypatch.setitem(consumer_grants.TASK_ACCESS, task, access)
    looked_up = consumer.task_for
    monkeypatch.setattr(consumer, "task_for", lambda name, registry: looked_up(name, {**registry, **example.tasks}))
    return example


def _synthesize(env: environments.Environment, outdir: Path) -> SynthesizedApp:
    """As local_aws/synth.py does, but in this process, where the guide's TaskAccess is."""
    from stacks.app_builder import build_app

    app, _ = build_app(env, outdir=str(outdir))  # with cdk-nag: an unacknowledged finding fails here
    app.synth()
    name = stack_name(env)
    return SynthesizedApp(
        env=env,
        stack_name=name,
        template=json.loads((outdir / f"{name}.template.json").read_text()),
        assets=json.loads((outdir / f"{name}.assets.json").read_text()),
        outdir=outdir,
    )


class GuideHarness(Harness):
    """The scenarios' harness over the stack with the guide's lane (its own synthesis is of the
    repository's catalogue, which has none)."""

    def __init__(self, synthesized: SynthesizedApp) -> None:
        super().__init__()
        self._synthesized = synthesized

    def close(self) -> None:
        """The synthesis is the test's tmp_path: nothing of the runtime's to remove."""


def test_the_guide_marks_every_step_once(blocks):
    assert sorted(blocks) == sorted((*STEPS, "test"))


def test_the_guides_lane_budget_and_model_plan_without_warnings(example):
    # `lanectl plan` at its default utilisation: the lane sized, the budget under the vendor's
    # quota, the model priced
    plans = [plan_lane(lane, 0.7) for lane in example.env.lanes]
    lines, warnings = dependency_lines(example.env, plans)
    assert [line.split(";")[0] for line in lines if line.startswith(example.dependency)] == [
        "copywriter: shared limit 2 (enforce), vendor quota 4"
    ]
    assert [w for w in warnings if example.dependency in w] == []
    assert lane_warnings(plan_lane(example.lane, 0.7)) == []
    assert model_warnings(example.env) == []


def test_the_guides_example_synthesizes_and_runs_on_the_local_runtime(registered, blocks, tmp_path):
    example = registered
    synthesized = _synthesize(example.env, tmp_path / "cdk.out")

    # The lane is in the template, and its consumer may invoke the guide's model and no other
    resources = synthesized.template["Resources"]
    policies = [r for r in resources.values() if r["Type"] == "AWS::IAM::Policy"]
    invoked = {
        json.dumps(statement["Resource"], sort_keys=True)
        for policy in policies
        for statement in policy["Properties"]["PolicyDocument"]["Statement"]
        if "bedrock:InvokeModel" in json.dumps(statement["Action"])
    }
    assert sum("foundation-model/amazon.nova-lite-v1:0" in resource for resource in invoked) == 1

    # The guide's own tests, on a runtime deployed from that template
    guide_tests: dict[str, Any] = {}
    _run(blocks["test"], guide_tests, "test")
    tests = {name: fn for name, fn in guide_tests.items() if name.startswith("test_")}
    assert len(tests) == 2, sorted(tests)
    harness = GuideHarness(synthesized)
    for test in tests.values():
        test(harness)


@pytest.mark.parametrize(
    ("step", "path"),
    [("task-module", "lambdas/pipeline/tasks/listings.py"), ("test", "tests/scenarios/test_listings_lane.py")],
)
def test_the_guides_whole_files_pass_the_repositorys_linters(blocks, step, path):
    # A reader copies these blocks into files as they are: they must pass `make lint` there.
    for command in (["check"], ["format", "--check"]):
        linted = subprocess.run(
            [sys.executable, "-m", "ruff", *command, "--stdin-filename", path, "-"],
            input=blocks[step],
            capture_output=True,
            text=True,
            cwd=GUIDE.parents[1],
            check=False,
        )
        assert linted.returncode == 0, linted.stdout + linted.stderr
