"""A lane that pauses itself: its consumer may disable its own mapping and nothing else, and an
alarm per reason names the cause."""

from __future__ import annotations

import pytest

from pipeline import metric_names
from pipeline.domain.dependencies.lane_pause import META_FAILING, MODEL_FAILING, MODEL_REFUSED, TOKEN_INVALID
from stacks.runtime_env import lane_id

pytestmark = pytest.mark.xdist_group("synth")


def _mapping_id(synthesized, lane: str) -> str:
    (found,) = [
        logical_id
        for logical_id in synthesized.resources("AWS::Lambda::EventSourceMapping")
        if logical_id.startswith(f"{lane_id(lane)}Lane")
    ]
    return found


def _mapping_updates(synthesized) -> dict[str, list]:
    """By policy logical id: the resources its lambda:UpdateEventSourceMapping statements name (the
    lane probe's and the after-deploy guard's aside: tests/infra/test_permissions.py and
    tests/infra/test_after_deploy.py pin them)."""
    found: dict[str, list] = {}
    for logical_id, policy in synthesized.resources("AWS::IAM::Policy").items():
        if logical_id.startswith(("LaneProbe", "AfterDeploy")):
            continue
        for statement in policy["Properties"]["PolicyDocument"]["Statement"]:
            actions = statement["Action"] if isinstance(statement["Action"], list) else [statement["Action"]]
            if "lambda:UpdateEventSourceMapping" in actions:
                found.setdefault(logical_id, []).append(statement["Resource"])
    return found


def test_only_the_ai_and_engagement_consumers_may_update_a_mapping_and_only_their_own(synthesized):
    updates = _mapping_updates(synthesized)
    pausable = {lane.name for lane in synthesized.env.lanes if lane.name in ("ai", "engagement")}
    assert pausable
    assert {policy_id.split("Lane")[0] for policy_id in updates} == {lane_id(lane) for lane in pausable}
    for policy_id, resources in updates.items():
        lane = next(lane for lane in pausable if policy_id.startswith(f"{lane_id(lane)}Lane"))
        ((resource,),) = [resources]
        assert {"Ref": _mapping_id(synthesized, lane)} in resource["Fn::Join"][1], resource


def test_each_pausable_lane_alarms_on_each_reason_it_pauses_for(synthesized):
    alarms = [a["Properties"] for a in synthesized.resources("AWS::CloudWatch::Alarm").values()]
    paused = {
        tuple((d["Name"], d["Value"]) for d in a["Dimensions"] if d["Name"] != "service")
        for a in alarms
        if a.get("MetricName") == metric_names.LANE_PAUSED
    }
    assert paused == {
        (("Lane", "ai"), ("Reason", MODEL_REFUSED)),
        (("Lane", "ai"), ("Reason", TOKEN_INVALID)),
        (("Lane", "engagement"), ("Reason", MODEL_REFUSED)),
        # Both lanes also pause when their dependency fails most calls (LanePolicy.pause_on_failures)
        (("Lane", "ai"), ("Reason", MODEL_FAILING)),
        (("Lane", "ai"), ("Reason", META_FAILING)),
        (("Lane", "engagement"), ("Reason", MODEL_FAILING)),
    }
    for alarm in alarms:
        if alarm.get("MetricName") == metric_names.LANE_PAUSED:
            assert "RUNBOOK.md#lane-paused-itself" in alarm["AlarmDescription"]
            assert alarm["Threshold"] == 1


def test_the_lane_probe_runs_on_its_own_schedule_and_pages_when_it_keeps_failing(synthesized):
    from stacks.runtime_env import PERIOD_METADATA

    env = synthesized.env
    (probe,) = [
        logical_id
        for logical_id, f in synthesized.resources("AWS::Lambda::Function").items()
        if f["Properties"]["Handler"] == "pipeline.handlers.lane_probe.handler"
    ]
    # Its own schedule, at the configured period, invoking the probe and nothing else
    rules = [
        rule
        for rule in synthesized.resources("AWS::Events::Rule").values()
        if any(t["Arn"] == {"Fn::GetAtt": [probe, "Arn"]} for t in rule["Properties"].get("Targets", []))
    ]
    ((rule,),) = [rules]
    assert rule["Metadata"][PERIOD_METADATA] == env.probe.period_seconds
    assert len(rule["Properties"]["Targets"]) == 1
    # An alarm per pausable lane on the probe failing, and one on its own errors, each to the runbook
    alarms = [a["Properties"] for a in synthesized.resources("AWS::CloudWatch::Alarm").values()]
    failing = {
        next(d["Value"] for d in a["Dimensions"] if d["Name"] == "Lane")
        for a in alarms
        if a.get("MetricName") == metric_names.PROBE_FAILED
    }
    assert failing == {"ai", "engagement"}
    errors = [
        a
        for a in alarms
        if a.get("MetricName") == "Errors" and {"Name": "FunctionName", "Value": {"Ref": probe}} in a["Dimensions"]
    ]
    assert len(errors) == 1
    for alarm in alarms:
        if alarm.get("MetricName") == metric_names.PROBE_FAILED or alarm in errors:
            assert "RUNBOOK.md#lane-probe-failing" in alarm["AlarmDescription"]
            assert alarm["EvaluationPeriods"] * alarm["Period"] >= env.probe.failing_alarm_seconds
