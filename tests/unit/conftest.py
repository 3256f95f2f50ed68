from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator

import pytest
from moto import mock_aws

from stacks import runtime_env
from stacks.config.environments import ENVIRONMENTS, Environment
from tests.support import roles
from tests.support.aws import REGION, Deployed, deploy


@pytest.fixture
def aws(monkeypatch):
    """An active moto mock with fake credentials; clients made inside the test are mocked."""
    for name, value in {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_SESSION_TOKEN": "testing",
        "AWS_DEFAULT_REGION": REGION,
        "AWS_REGION": REGION,
    }.items():
        monkeypatch.setenv(name, value)
    with mock_aws():
        yield


@pytest.fixture
def env_local() -> Environment:
    return ENVIRONMENTS["local"]


@pytest.fixture
def deployed(aws, env_local) -> Iterator[Deployed]:
    """The pipeline's resources, with the local template's roles enforced on them: a handler built
    from one of the environ fixtures below calls AWS as its function's role."""
    made = deploy(env_local)
    with roles.enforced(made) as grants:
        yield dataclasses.replace(made, grants=grants)


def _function(environ: dict[str, str], deployed: Deployed, handler: str, lane: str | None = None) -> dict[str, str]:
    """A function's variables as Lambda gives them: the template's, the region, its role's session."""
    return {**environ, "AWS_REGION": REGION, **roles.role_credentials(deployed.grants, handler, lane)}


@pytest.fixture
def ingress_environ(deployed, env_local) -> dict[str, str]:
    environ = runtime_env.ingress(env_local, deployed.resources, json.dumps)
    return _function(environ, deployed, "pipeline.handlers.ingress.handler")


@pytest.fixture
def jobs_environ(deployed, env_local) -> dict[str, str]:
    return _function(
        runtime_env.jobs(env_local, deployed.resources, json.dumps), deployed, "pipeline.handlers.jobs.handler"
    )


@pytest.fixture
def erasure_environ(deployed, env_local) -> dict[str, str]:
    environ = runtime_env.erasure(env_local, deployed.resources, json.dumps)
    return _function(environ, deployed, "pipeline.handlers.erasure.handler")


@pytest.fixture
def sweeper_environ(deployed, env_local) -> dict[str, str]:
    environ = runtime_env.sweeper(env_local, deployed.resources, json.dumps)
    return _function(environ, deployed, "pipeline.handlers.sweeper.handler")


@pytest.fixture
def consumer_environ(deployed, env_local):
    """A factory: the environment of one lane's consumer."""

    def make(lane_name: str) -> dict[str, str]:
        environ = runtime_env.consumer(env_local, env_local.lane(lane_name), deployed.resources, json.dumps)
        return _function(environ, deployed, roles.CONSUMER, lane_name)

    return make


@pytest.fixture
def metrics(capsys):
    """The metrics emitted so far, as (name, dimensions) pairs read from the EMF lines on stdout,
    one pair per dimension set as CloudWatch publishes them (the `service` dimension Powertools
    adds to everything is left out)."""

    def read() -> list[tuple[str, dict[str, str]]]:
        emitted = []
        for line in capsys.readouterr().out.splitlines():
            if not line.startswith('{"_aws"'):
                continue
            blob = json.loads(line)
            for directive in blob["_aws"]["CloudWatchMetrics"]:
                for group in directive["Dimensions"]:
                    dimensions = {d: blob[d] for d in group if d != "service"}
                    emitted.extend((metric["Name"], dimensions) for metric in directive["Metrics"])
        return emitted

    return read


@pytest.fixture
def model():
    """The process's fake of Bedrock's Converse (local_aws/converse_fake.py), every consumer's
    model when a test gives none of its own: default behaviour, no calls, and so again after."""
    from local_aws.converse_fake import FAKE

    FAKE.reset()
    yield FAKE
    FAKE.reset()
