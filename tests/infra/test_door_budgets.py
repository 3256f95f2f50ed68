"""The HTTP doors answer before their timeout when AWS is slow: every AWS call they make one after
another, each at its worst (adapters/clients.py), ends inside the function's timeout in the
template, with time left to answer a 500. A timeout would answer Meta with nothing the door counts."""

from __future__ import annotations

import json

import pytest

from pipeline.adapters import clients
from pipeline.handlers import erasure, ingress, jobs
from stacks import runtime_env
from stacks.config.environments import ENVIRONMENTS

pytestmark = pytest.mark.xdist_group("synth")

ANSWER_MARGIN_SECONDS = 2.0
"""A cold start's imports and the answer itself, on top of the calls."""

DOORS = {
    "pipeline.handlers.ingress.handler": (ingress, runtime_env.ingress),
    "pipeline.handlers.jobs.handler": (jobs, runtime_env.jobs),
    "pipeline.handlers.erasure.handler": (erasure, runtime_env.erasure),
}


def _environ(variables) -> dict[str, str]:
    prod = ENVIRONMENTS["prod"]
    urls = {lane.name: f"https://sqs.us-east-1.amazonaws.com/123456789012/{lane.name}" for lane in prod.lanes}
    arn = "arn:aws:secretsmanager:us-east-1:123456789012:secret:s-AbCdEf"
    resources = runtime_env.Resources("w", "j", "s", "d", urls, urls, arn, arn, arn, "a", arn)
    return {**variables(prod, resources, json.dumps), "AWS_REGION": "us-east-1"}


class _Made(Exception):
    """Stops the cold start once its clients are made: nothing here answers AWS calls."""


def _budget_of(module, environ) -> clients.CallBudget:
    """The budget the handler's own clients are made with."""
    made = []
    real = clients.Clients

    def spy(*args, **kwargs):
        made.append(kwargs.get("budget", clients.WORKER))
        raise _Made

    module.Clients = spy
    try:
        with pytest.raises(_Made):
            module.create_handler(environ)
    finally:
        module.Clients = real
    (budget,) = made
    return budget


@pytest.mark.parametrize("handler", sorted(DOORS))
def test_a_door_s_calls_at_their_worst_end_inside_its_timeout(synth_env, handler):
    # Given the door's function as prod deploys it
    (function,) = [
        f["Properties"]
        for f in synth_env("prod").resources("AWS::Lambda::Function").values()
        if f["Properties"]["Handler"] == handler
    ]
    # When every call it makes in a request takes as long as its clients allow
    module, variables = DOORS[handler]
    budget = _budget_of(module, _environ(variables))
    worst = clients.DOOR_SEQUENTIAL_CALLS * budget.worst_case_seconds
    # Then they end, with time to answer, before Lambda would time the function out
    assert worst + ANSWER_MARGIN_SECONDS <= function["Timeout"], (
        f"{handler}: {clients.DOOR_SEQUENTIAL_CALLS} calls of {budget.worst_case_seconds:g} s at worst take "
        f"{worst:g} s of a {function['Timeout']} s timeout"
    )


def test_the_worst_case_counts_each_attempt_and_the_backoff_before_each_retry():
    # botocore's old default here: 3 retries (4 calls) with 2 s connect and 5 s read timeouts
    assert clients.CallBudget(attempts=4, connect_seconds=2, read_seconds=5).worst_case_seconds == 4 * 7 + 1 + 2 + 4
    assert clients.DOOR.worst_case_seconds == pytest.approx(1.1)
    assert clients.Clients("us-east-1", budget=clients.DOOR).dynamodb.meta.config.read_timeout == 0.7
