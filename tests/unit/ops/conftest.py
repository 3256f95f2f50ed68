from __future__ import annotations

import os
from dataclasses import dataclass

import pytest

from ops.cli import Runtime, run
from ops.output import Console
from stacks.config.environments import ENVIRONMENTS

from .support import FakeClock, deploy_stack


@dataclass(frozen=True)
class Result:
    code: int
    out: str
    err: str


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def lanectl(capsys, clock):
    """Runs the CLI in-process (so moto's mock applies) and returns its exit code and output."""

    def invoke(*argv: str, aws=None) -> Result:
        environ = {k: v for k, v in os.environ.items() if not k.startswith("LANES_")}
        runtime = Runtime(console=Console(), environ=environ, clock=clock, sleep=clock.sleep)
        if aws is not None:
            runtime.aws = aws
        code = run(list(argv), runtime)
        captured = capsys.readouterr()
        return Result(code, captured.out, captured.err)

    return invoke


@pytest.fixture
def dev_stack(aws):
    return deploy_stack(ENVIRONMENTS["dev"])


@pytest.fixture
def prod_stack(aws):
    return deploy_stack(ENVIRONMENTS["prod"])
