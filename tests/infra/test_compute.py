"""Functions, event source mappings and the schedules, in every environment."""

from __future__ import annotations

import json

import pytest

from pipeline import settings
from pipeline.domain.webhook.routing import WEBHOOK_LANES
from pipeline.settings.lane_policy import LaneCapacity
from stacks.constructs.lane import queue_logical_id
from stacks.environment_size import LAMBDA_ENVIRONMENT_BYTES, StandIns, measured
from stacks.runtime_env import PERIOD_METADATA, stack_name

pytestmark = pytest.mark.xdist_group("synth")


def _functions_by_handler(synthesized, handler: str) -> list[dict]:
    return [
        f["Properties"]
        for f in synthesized.resources("AWS::Lambda::Function").values()
        if f["Properties"]["Handler"] == handler
    ]


def _consumer(synthesized, lane_name: str) -> tuple[str, dict]:
    for logical_id, function in synthesized.resources("AWS::Lambda::Function").items():
        variables = function["Properties"]["Environment"]["Variables"]
        if "LANE" in variables and json.loads(variables["LANE"])["name"] == lane_name:
            return logical_id, function["Properties"]
    raise AssertionError(f"no consumer for lane {lane_name}")


def _mapping_for(synthesized, lane_name: str) -> dict:
    queue = queue_logical_id(lane_name)
    mappings = [
        m["Properties"]
        for m in synthesized.resources("AWS::Lambda::EventSourceMapping").values()
        if m["Properties"]["EventSourceArn"] == {"Fn::GetAtt": [queue, "Arn"]}
    ]
    assert len(mappings) == 1, f"{lane_name}: expected one mapping on {queue}, found {len(mappings)}"
    return mappings[0]


def test_every_function_is_arm64_on_the_latest_python_with_powertools(synthesized):
    functions = synthesized.resources("AWS::Lambda::Function")
    # consumers, webhook, jobs, erasure, sweeper, lane probe, after-deploy guard
    assert len(functions) == len(synthesized.env.lanes) + 6
    for function in functions.values():
        props = function["Properties"]
        assert props["Runtime"] == "python3.14"
        assert props["Architectures"] == ["arm64"]
        # Lambda traces the first request a second and 5% of the rest, not configurably: only
        # environments without production volume trace actively; the others do not trace at all (and
        # their roles may not write to X-Ray).
        assert props.get("TracingConfig") == ({"Mode": "Active"} if synthesized.env.tracing_active else None)
        assert props["LoggingConfig"]["LogFormat"] == "JSON"
        (layer,) = props["Layers"]
        parameter = synthesized.template["Parameters"][layer["Ref"]]
        assert parameter["Type"] == "AWS::SSM::Parameter::Value<String>"
        assert parameter["Default"] == (
            f"/aws/service/powertools/python/arm64/python3.14/{synthesized.env.powertools_version}"
        )


def test_every_consumer_keeps_its_lane_budget(synthesized):
    env = synthesized.env
    for lane in env.lanes:
        _, props = _consumer(synthesized, lane.name)
        assert props["Handler"] == "pipeline.handlers.consumer.handler"
        assert props["Timeout"] == lane.policy.timeout_seconds
        assert props["MemorySize"] == lane.memory_mb
        if env.reserved_concurrency:
            assert props["ReservedConcurrentExecutions"] == lane.reserved_concurrency >= lane.policy.max_concurrency
        else:
            assert "ReservedConcurrentExecutions" not in props
        mapping = _mapping_for(synthesized, lane.name)
        assert mapping["BatchSize"] == lane.policy.batch_size
        assert mapping.get("MaximumBatchingWindowInSeconds", 0) == lane.batch_window_seconds
        assert mapping["ScalingConfig"] == {"MaximumConcurrency": lane.policy.max_concurrency}
        assert mapping["FunctionResponseTypes"] == ["ReportBatchItemFailures"]


def test_the_jobs_api_has_slots_of_its_own_where_the_environment_reserves(synthesized):
    (jobs,) = _functions_by_handler(synthesized, "pipeline.handlers.jobs.handler")
    env = synthesized.env
    if env.reserved_concurrency:
        assert jobs["ReservedConcurrentExecutions"] == env.jobs.reserved_concurrency > 0
    else:
        assert "ReservedConcurrentExecutions" not in jobs


def test_every_lane_the_router_can_return_is_consumed(synthesized):
    # A routed-but-unconsumed queue strands its work forever while the producer sees success.
    for lane_name in WEBHOOK_LANES | set(synthesized.env.lane_names):
        assert queue_logical_id(lane_name) in synthesized.template["Resources"]
        mapping = _mapping_for(synthesized, lane_name)
        assert mapping["FunctionResponseTypes"] == ["ReportBatchItemFailures"]


def test_function_environments_parse_into_handler_settings(synthesized):
    # Given the environment's lanes, when each function's variables are read as the handlers read
    # them, then every function holds exactly the catalogue's policy: nothing converted by hand
    env = synthesized.env
    for lane in env.lanes:
        _, props = _consumer(synthesized, lane.name)
        assert settings.lane(props["Environment"]["Variables"]) == lane.policy
    # The jobs API and the sweeper carry, of every lane, only what they read
    (jobs,) = _functions_by_handler(synthesized, "pipeline.handlers.jobs.handler")
    assert settings.lanes(jobs["Environment"]["Variables"]) == {
        lane.name: LaneCapacity.of(lane.policy) for lane in env.lanes
    }
    (sweeper,) = _functions_by_handler(synthesized, "pipeline.handlers.sweeper.handler")
    objectives = {lane.name: lane.policy.objective_seconds for lane in env.lanes}
    assert settings.lane_objectives(sweeper["Environment"]["Variables"]) == objectives
    assert "LANES" not in sweeper["Environment"]["Variables"]


def test_the_jobs_api_is_told_maximum_concurrency_once(synthesized):
    # The drain rate admission starts from is derived from the lane policy, not shipped beside it
    (jobs,) = _functions_by_handler(synthesized, "pipeline.handlers.jobs.handler")
    assert "lane_capacity_per_second" not in json.loads(jobs["Environment"]["Variables"]["JOBS_SETTINGS"])
    assert jobs["Environment"]["Variables"]["LANES"].count('"max_concurrency"') == len(synthesized.env.lanes)


def _stand_ins(synthesized) -> StandIns:
    def resource(logical_id: str):
        found = synthesized.template["Resources"].get(logical_id)
        return None if found is None else (found["Type"], found.get("Properties", {}))

    return StandIns(stack_name(synthesized.env), resource, synthesized.env.region)


def environment_bytes(synthesized) -> dict[str, int]:
    """Each function's environment as Lambda measures it, its references resolved."""
    stand_ins = _stand_ins(synthesized)
    return {
        logical_id: measured(resource["Properties"]["Environment"]["Variables"], stand_ins)
        for logical_id, resource in synthesized.resources("AWS::Lambda::Function").items()
    }


def test_every_function_environment_fits_lambda_s_limit(synthesized):
    # Lambda measures the variables as one JSON object: the quotes a policy's JSON carries are
    # escaped there, and count.
    sizes = environment_bytes(synthesized)
    over = {logical_id: size for logical_id, size in sizes.items() if size > LAMBDA_ENVIRONMENT_BYTES}
    assert over == {}, f"{synthesized.env.name}: over Lambda's {LAMBDA_ENVIRONMENT_BYTES} bytes: {over}"


def test_a_reference_resolves_to_the_name_cloudformation_would_give_it(synth_env):
    synthesized = synth_env("prod")
    stand_ins = _stand_ins(synthesized)
    assert stand_ins.resolved({"Fn::Join": ["", ["a/", {"Ref": "MessagesQueue"}]]}) == (
        "a/https://sqs.ap-southeast-5.amazonaws.com/123456789012/"
        + synthesized.resource("MessagesQueue")["Properties"]["QueueName"]
    )
    assert stand_ins.resolved({"Ref": "JobsTable"}) == "lanes-prod-JobsTable-XXXXXXXXXXXXX"
    with pytest.raises(ValueError, match="cannot measure"):
        stand_ins.resolved({"Fn::Sub": "${JobsTable}"})


def test_sweeper_runs_on_its_own_schedule(synthesized):
    (sweeper,) = _functions_by_handler(synthesized, "pipeline.handlers.sweeper.handler")
    assert "LANE" not in sweeper["Environment"]["Variables"]  # not a lane consumer
    rules = {r["Properties"]["Description"]: r for r in synthesized.resources("AWS::Events::Rule").values()}
    sweep = rules[f"lanes-{synthesized.env.name}: sweep for lost and abandoned work"]
    assert sweep["Metadata"][PERIOD_METADATA] == synthesized.env.sweeper.period_seconds
    assert sweep["Properties"]["ScheduleExpression"].startswith("rate(")
    (target,) = sweep["Properties"]["Targets"]
    assert target["RetryPolicy"] == {"MaximumRetryAttempts": 0}


def test_ticks_carry_an_envelope_that_expires_at_its_cadence(synthesized):
    lane = synthesized.env.lane("scheduled")
    assert lane.tick is not None
    assert lane.policy.default_expiry_seconds == lane.tick.period_seconds
    rules = [
        r
        for r in synthesized.resources("AWS::Events::Rule").values()
        if r["Properties"]["Targets"][0]["Arn"] == {"Fn::GetAtt": [queue_logical_id("scheduled"), "Arn"]}
    ]
    (rule,) = rules
    assert rule["Metadata"][PERIOD_METADATA] == lane.tick.period_seconds
    template = rule["Properties"]["Targets"][0]["InputTransformer"]["InputTemplate"]
    sample = json.loads(template.replace("<id>", "e-1").replace("<time>", '"2026-11-30T03:00:00Z"'))
    assert sample["lane"] == "scheduled"
    assert sample["source"] == "internal"
    assert sample["id"] == "tick-e-1"
