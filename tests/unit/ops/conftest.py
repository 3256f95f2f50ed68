from __future__ import annotations

import os
from dataclasses import dataclass

import pytest

from ops.aws import Aws
from ops.cli import Runtime, run
from ops.output import Console
from stacks.config.environments import ENVIRONMENTS

from .support import AVAILABLE, BedrockCatalogue, FakeClock, deploy_stack


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


@pytest.fixture
def emulator_endpoint(monkeypatch):
    """An emulator over HTTP on localhost, as `lanectl local` serves one: its endpoint URL."""
    from moto.server import ThreadedMotoServer

    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    try:
        host, port = server.get_host_and_port()
        yield f"http://{host}:{port}"
    finally:
        server.stop()


@pytest.fixture(autouse=True)
def bedrock(monkeypatch) -> BedrockCatalogue:
    """Bedrock's model catalogue for every client the CLI makes: each configured model available
    and granted, unless a test says otherwise."""
    models = [model for env in ENVIRONMENTS.values() for model in env.models]
    catalogue = BedrockCatalogue(
        models={model.foundation_model: AVAILABLE for model in models},
        profiles={model.settings.model_id: "ACTIVE" for model in models if model.inference_profile},
    )
    made = Aws.client

    def client(self: Aws, service: str):
        if service != "bedrock":
            return made(self, service)
        if service not in self._clients:
            self._clients[service] = catalogue.client(self.target.region)
        return self._clients[service]

    monkeypatch.setattr(Aws, "client", client)
    return catalogue
