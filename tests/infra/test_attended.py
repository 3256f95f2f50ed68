"""An environment that keeps data synthesizes only with someone paged and a jobs caller granted,
or with its config saying why not (stacks/config/on_call.py, Unattended)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from pipeline.settings.callers import ALL_TENANTS
from stacks.config.environments import ENVIRONMENTS, EmailEndpoint, Unattended

ON_CALL = (EmailEndpoint("on-call@example.com"),)
CALLERS = {"arn:aws:iam::123456789012:role/backend": (ALL_TENANTS,)}


def _prod(**changes):
    prod = ENVIRONMENTS["prod"]
    return replace(prod, **{"unattended": None, **changes})


def _with_callers(env, callers):
    return replace(env.jobs, settings=replace(env.jobs.settings, callers=callers))


def test_prod_paging_nobody_does_not_synthesize_unless_its_config_says_why():
    prod = ENVIRONMENTS["prod"]
    # Given prod with a caller but no on-call endpoint and no reason given, then it is refused,
    # saying what is missing and how to deploy it so on purpose
    with pytest.raises(ValueError, match="prod keeps data") as refused:
        _prod(on_call=(), jobs=_with_callers(prod, CALLERS))
    assert str(refused.value) == (
        "prod keeps data and has no on-call endpoint (on_call): every alarm would reach nobody. Add them in "
        'stacks/config/environments.py, or deploy it so on purpose with unattended=Unattended("why")'
    )


def test_prod_granting_no_caller_does_not_synthesize_unless_its_config_says_why():
    prod = ENVIRONMENTS["prod"]
    with pytest.raises(ValueError, match=r"no jobs caller \(jobs.settings.callers\): the jobs API would refuse"):
        _prod(on_call=ON_CALL, jobs=_with_callers(prod, {}))


def test_an_environment_attended_or_saying_why_not_is_accepted():
    prod = ENVIRONMENTS["prod"]
    attended = _prod(on_call=ON_CALL, jobs=_with_callers(prod, CALLERS))
    assert attended.unattended is None
    assert _prod(unattended=Unattended("a load-test copy nobody watches")).on_call == ()
    # An environment that keeps nothing (dev) needs neither
    assert ENVIRONMENTS["dev"].on_call == ()
    assert ENVIRONMENTS["dev"].unattended is None
    with pytest.raises(ValueError, match="says why, in words"):
        Unattended(" ")


def test_the_environments_shipped_unattended_say_so_in_their_synthesis(synth_env):
    # Given prod as the repository ships it (no real on-call endpoint nor producer role), then its
    # synthesis, which `cdk deploy` prints, carries the reason
    stack = synth_env("prod").stack
    messages = [str(entry.data) for entry in stack.node.metadata if entry.type == "aws:cdk:warning"]
    assert any("prod pages nobody or grants no jobs caller: this repository holds no real" in m for m in messages)
