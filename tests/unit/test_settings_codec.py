"""The doors' and the retention settings are written by the stack and read by the functions with
the policy codec: a key missing, unknown or of the wrong type is refused, naming the variable and
the field. No AWS needed: the environment is written with made-up resource names."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import pytest

from pipeline import settings
from stacks import runtime_env
from stacks.config.environments import ENVIRONMENTS

ENV = ENVIRONMENTS["local"]
RESOURCES = runtime_env.Resources(
    webhook_table="webhook-log",
    jobs_table="jobs",
    state_table="state",
    data_table="data",
    queue_urls={lane.name: f"https://sqs.local/{lane.name}" for lane in ENV.lanes},
    dlq_urls={lane.name: f"https://sqs.local/{lane.name}-dlq" for lane in ENV.lanes},
    secret_arn="arn:aws:secretsmanager:eu-west-1:123456789012:secret:meta",
    sender_key_arn="arn:aws:secretsmanager:eu-west-1:123456789012:secret:sender-key",
)
PARTNER = "arn:aws:iam::123456789012:role/partner-acme"

VARIABLES: dict[str, tuple[Callable[..., dict[str, str]], Callable[[dict[str, str]], Any]]] = {
    "WEBHOOK_SETTINGS": (runtime_env.ingress, settings.webhook),
    "JOBS_SETTINGS": (runtime_env.jobs, settings.jobs),
    "ERASURE_SETTINGS": (runtime_env.erasure, settings.erasure),
    "RETENTION_SETTINGS": (runtime_env.ingress, settings.retention),
}


def _written(variable: str) -> dict[str, str]:
    write, _ = VARIABLES[variable]
    return write(ENV, RESOURCES, json.dumps)


def _read_changed(variable: str, change: Callable[[dict[str, Any]], Any]) -> Any:
    environ = _written(variable)
    plain = json.loads(environ[variable])
    change(plain)
    _, read = VARIABLES[variable]
    return read({**environ, variable: json.dumps(plain)})


@pytest.mark.parametrize("variable", sorted(VARIABLES))
def test_what_the_stack_writes_the_function_reads_back(variable):
    # Given a variable as the stack writes it, when its function reads it, then it comes back as
    # written, every key and value
    environ = _written(variable)
    _, read = VARIABLES[variable]
    parsed = read(environ)
    written = json.loads(environ[variable])
    assert {key: getattr(parsed, key) for key in written} == {
        key: (value if not isinstance(value, dict) else {k: tuple(v) for k, v in value.items()})
        for key, value in written.items()
    }


def test_the_jobs_api_matches_callers_by_the_grants_it_was_given():
    # Given JOBS_SETTINGS granting one partner role one tenant
    parsed = _read_changed("JOBS_SETTINGS", lambda p: p.update(callers={PARTNER: ["acme"]}))
    # Then a session of that role may act for that tenant only
    session = "arn:aws:sts::123456789012:assumed-role/partner-acme/someone"
    assert parsed.grants.may_act_for(session, "acme")
    assert not parsed.grants.may_act_for(session, "globex")


@pytest.mark.parametrize(
    ("variable", "change", "message"),
    [
        ("WEBHOOK_SETTINGS", lambda p: p.pop("max_json_depth"), r"missing field\(s\) max_json_depth"),
        ("WEBHOOK_SETTINGS", lambda p: p.update(max_body_bytes="big"), r"max_body_bytes: expected int, got 'big'"),
        ("WEBHOOK_SETTINGS", lambda p: p.update(secret_cache_seconds=30), r"secret_cache_seconds must be 60..300"),
        ("JOBS_SETTINGS", lambda p: p.pop("tenant_queued_limit"), r"missing field\(s\) tenant_queued_limit"),
        ("JOBS_SETTINGS", lambda p: p.update(max_payload_bytes=1.5), r"max_payload_bytes: expected int, got 1.5"),
        ("JOBS_SETTINGS", lambda p: p.update(callers={PARTNER: "acme"}), r"callers\['arn:aws:iam::.*: expected an"),
        ("JOBS_SETTINGS", lambda p: p.update(callers={"partner": ["acme"]}), r"'partner' is not an IAM role"),
        ("ERASURE_SETTINGS", lambda p: p.update(deadline_days=7), r"unknown field\(s\) deadline_days"),
        ("ERASURE_SETTINGS", lambda p: p.update(lane=None), r"lane: expected str, got None"),
        ("RETENTION_SETTINGS", lambda p: p.pop("jobs_seconds"), r"missing field\(s\) jobs_seconds"),
        ("RETENTION_SETTINGS", lambda p: p.update(effects_seconds=True), r"effects_seconds: expected int, got True"),
        ("RETENTION_SETTINGS", lambda p: p.update(effects_seconds=0), r"every period >= 1 second"),
    ],
    ids=[
        "webhook-missing",
        "webhook-type",
        "webhook-rule",
        "jobs-missing",
        "jobs-type",
        "jobs-callers-type",
        "jobs-callers-rule",
        "erasure-unknown",
        "erasure-type",
        "retention-missing",
        "retention-type",
        "retention-rule",
    ],
)
def test_a_setting_that_does_not_match_its_type_is_refused_naming_the_variable_and_field(variable, change, message):
    # Given a variable as the stack writes it, with one mistake
    # When its function reads it, then the error names the variable, the type and the field
    with pytest.raises(settings.SettingsError, match=rf"^{variable}: \w+Settings[.:].*{message}"):
        _read_changed(variable, change)


def _consumer_environ() -> dict[str, str]:
    lane = next(lane for lane in ENV.lanes if lane.policy.dependency is not None)
    return runtime_env.consumer(ENV, lane, RESOURCES, json.dumps)


def test_the_dependency_budgets_come_back_as_the_environment_defines_them():
    read = settings.dependencies(_consumer_environ())

    assert {name: (d.limit, d.mode) for name, d in read.items()} == {
        d.name: (d.limit, d.mode.value) for d in ENV.dependencies
    }


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda budget: budget.pop("limit"), r"missing field\(s\) limit"),
        (lambda budget: budget.update(limit="40"), r"limit: expected int, got '40'"),
        (lambda budget: budget.update(burst=5), r"unknown field\(s\) burst"),
    ],
    ids=["missing", "type", "unknown"],
)
def test_a_dependency_budget_that_does_not_match_its_type_is_refused_naming_the_field(change, message):
    environ = _consumer_environ()
    plain = json.loads(environ["DEPENDENCIES"])
    change(next(iter(plain.values())))

    with pytest.raises(settings.SettingsError, match=rf"^DEPENDENCIES: DependencyBudget[.:].*{message}"):
        settings.dependencies({**environ, "DEPENDENCIES": json.dumps(plain)})


SENDING = replace(RESOURCES, access_token_arn="arn:aws:secretsmanager:eu-west-1:123456789012:secret:token")


def _sending_environ(env=ENV) -> dict[str, str]:
    return runtime_env.consumer(env, env.lane("ai"), SENDING, json.dumps)


def test_the_sending_lane_reads_metas_messages_a_second_per_number_as_the_environment_sets_it():
    environ = _sending_environ()
    read = settings.ConsumerSettings.from_environ({**environ, "AWS_REGION": "eu-west-1"})
    assert read.send_per_second == ENV.meta_messages_per_second == 80
    raised = _sending_environ(replace(ENV, meta_messages_per_second=1000))
    assert settings.ConsumerSettings.from_environ({**raised, "AWS_REGION": "eu-west-1"}).send_per_second == 1000


@pytest.mark.parametrize(("raw", "message"), [("eighty", "a whole number"), ("2", ">= 3")])
def test_a_messages_a_second_that_is_not_a_rate_is_refused_naming_the_variable(raw, message):
    environ = {**_sending_environ(), "AWS_REGION": "eu-west-1", "META_MESSAGES_PER_SECOND": raw}
    with pytest.raises(settings.SettingsError, match=rf"META_MESSAGES_PER_SECOND must be {message}"):
        settings.ConsumerSettings.from_environ(environ)


@pytest.mark.parametrize("per_second", [2, 1001])
def test_an_environment_cannot_set_a_number_beyond_metas_tiers(per_second):
    with pytest.raises(ValueError, match=r"meta_messages_per_second must be 3\.\.1000"):
        replace(ENVIRONMENTS["prod"], meta_messages_per_second=per_second)
