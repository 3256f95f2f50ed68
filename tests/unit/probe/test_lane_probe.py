"""The lane probe on moto under its own role: a lane that paused itself is retried on the dependency
that stopped it (Meta's token through the local Graph API's `GET /me`, the model with a one-token
Converse call), kept paused while that fails, and brought back on the paced ramp once it answers;
a lane an operator paused is left alone."""

from __future__ import annotations

import dataclasses
import json

import boto3
import pytest
from botocore.exceptions import ClientError

from local_aws.graph_fake import GraphFake
from pipeline.adapters.dependency_checks import MetaTokenCheck
from pipeline.adapters.lane_switch import LaneMappings
from pipeline.adapters.pause_marks import PauseMarks
from pipeline.handlers.lane_probe import create_handler
from stacks import runtime_env
from tests.support import roles
from tests.support.aws import META_ACCESS_TOKEN, REGION, deploy
from tests.support.mappings import mapped_function

PROBE = "pipeline.handlers.lane_probe.handler"
LANES = ("ai", "engagement")


@dataclasses.dataclass
class Probe:
    environ: dict[str, str]
    mappings: dict[str, str]
    marks: PauseMarks
    graph: GraphFake

    def run(self) -> dict:
        return create_handler(self.environ)({}, None)

    def mapping(self, lane: str) -> tuple[str, int | None]:
        found = boto3.client("lambda", region_name=REGION).get_event_source_mapping(UUID=self.mappings[lane])
        return found["State"], (found.get("ScalingConfig") or {}).get("MaximumConcurrency")

    def paused_itself(self, lane: str, reason: str) -> None:
        """What the consumer does (adapters/lane_switch.py): the mapping disabled, then its mark."""
        boto3.client("lambda", region_name=REGION).update_event_source_mapping(UUID=self.mappings[lane], Enabled=False)
        assert self.marks.paused_by_lane(lane, reason)


@pytest.fixture
def probe(aws, env_local, model):
    graph = GraphFake(token=META_ACCESS_TOKEN)
    graph.start()
    made = deploy(env_local)
    mappings = {lane: mapped_function(made.queue_arns[lane], f"lanes-local-{lane}-consumer") for lane in LANES}
    made = dataclasses.replace(made, mapping_ids=mappings)
    try:
        with roles.enforced(made) as grants:
            environ = {
                **runtime_env.lane_probe(env_local, made.resources, json.dumps, mappings),
                "GRAPH_API_URL": graph.url,
                "AWS_REGION": REGION,
                **roles.role_credentials(grants, PROBE),
            }
            marks = PauseMarks(boto3.client("dynamodb", region_name=REGION), made.resources.state_table, lambda: 1.0)
            yield Probe(environ, mappings, marks, graph)
    finally:
        graph.stop()


def test_a_lane_paused_by_a_revoked_token_stays_paused_while_meta_refuses_it(probe, metrics):
    # Given the ai lane paused by its consumer on Meta's 190, and the token still revoked
    probe.paused_itself("ai", "meta_token_invalid")
    probe.graph.configure(revoked=True)

    # When the probe runs
    report = probe.run()

    # Then it asked Meta once with the token, found it refused, and left the lane paused
    assert probe.graph.token_checks == 1
    assert report["lanes"] == [
        {
            "lane": "ai",
            "reason": "meta_token_invalid",
            "mapping": "Disabled",
            "action": "still_paused",
            "failing": {"meta": "meta_token_invalid"},
        }
    ]
    assert probe.mapping("ai")[0] == "Disabled"
    assert ("ProbeFailed", {"Lane": "ai"}) in metrics()


def test_once_the_token_answers_the_lane_comes_back_on_the_ramp_and_its_mark_goes(probe, metrics):
    # Given the ai lane paused on a revoked token, which has since been replaced
    probe.paused_itself("ai", "meta_token_invalid")

    # When the probe runs, once and again
    first = probe.run()
    after_first = probe.mapping("ai")
    second = probe.run()

    # Then the first run resumes it at the ramp's floor, the second at the lane's own MaximumConcurrency
    # (local's ai lane: 3), and the mark is gone, so later runs do nothing
    assert (first["lanes"][0]["action"], after_first) == ("ramp_step", ("Enabled", 2))
    assert (second["lanes"][0]["action"], probe.mapping("ai")) == ("resumed", ("Enabled", 3))
    assert probe.marks.read(LANES) == {}
    assert probe.run() == {"lanes": []}
    assert ("LaneResumed", {"Lane": "ai"}) in metrics()


def test_a_lane_an_operator_paused_is_left_alone_and_nothing_is_called(probe):
    # Given the ai lane paused by its consumer, then held by an operator (`lanectl lane pause`)
    probe.paused_itself("ai", "meta_token_invalid")
    probe.marks.paused_by_operator("ai")

    # When the probe runs
    report = probe.run()

    # Then the lane stays paused and Meta was not asked
    assert report["lanes"] == [{"lane": "ai", "action": "left", "by": "operator"}]
    assert probe.mapping("ai")[0] == "Disabled"
    assert probe.graph.token_checks == 0


def test_a_consumer_pausing_after_an_operator_leaves_the_operators_mark(probe):
    # Given an operator's pause of the engagement lane
    probe.marks.paused_by_operator("engagement")

    # When a consumer still running pauses it for its own reason
    kept = probe.marks.paused_by_lane("engagement", "model_refused")

    # Then the operator's mark stands
    assert kept is False
    assert probe.marks.read(LANES)["engagement"].by == "operator"


@pytest.mark.parametrize("lane", LANES)
def test_a_refused_model_keeps_the_lane_paused_until_bedrock_lets_it_call(probe, model, lane):
    # Given a lane paused on its model refused, and the model still refused
    probe.paused_itself(lane, "model_refused")
    model.configure(refuse=True)

    # When the probe runs, then again once the model is enabled
    refused = probe.run()
    model.configure(refuse=False)
    answered = probe.run()

    # Then it retried with one minimal Converse call each time, on the lane's own model
    calls = model.calls()
    assert [call.outcome for call in calls] == ["AccessDeniedException", "ok"]
    (settings,) = [each for each in json.loads(probe.environ["PROBE_SETTINGS"])["lanes"] if each["name"] == lane]
    assert {call.model_id for call in calls} == {settings["model_id"]}
    assert refused["lanes"][0]["failing"] == {"model": "model_refused"}
    # and Meta was not asked: the model is what stopped the lane
    assert probe.graph.token_checks == 0
    assert (answered["lanes"][0]["action"], probe.mapping(lane)) == ("ramp_step", ("Enabled", 2))


def test_a_lane_with_no_mark_is_not_touched(probe):
    # Given an ai lane an operator paused before the marks existed (no mark at all)
    boto3.client("lambda", region_name=REGION).update_event_source_mapping(UUID=probe.mappings["ai"], Enabled=False)

    # When the probe runs
    report = probe.run()

    # Then nothing is done and nothing called
    assert report == {"lanes": []}
    assert probe.mapping("ai")[0] == "Disabled"
    assert probe.graph.token_checks == 0


def test_an_operators_pause_made_while_the_probe_checks_the_dependency_is_kept(probe, monkeypatch):
    # Given the ai lane paused on a revoked token, since replaced, and an operator who pauses the
    # lane (`lanectl lane pause`: their mark, the mapping already stopped) while the probe asks Meta
    probe.paused_itself("ai", "meta_token_invalid")
    asked = MetaTokenCheck.check

    def operator_pauses_meanwhile(check: MetaTokenCheck) -> str | None:
        probe.marks.paused_by_operator("ai")
        return asked(check)

    monkeypatch.setattr(MetaTokenCheck, "check", operator_pauses_meanwhile)

    # When the probe runs
    report = probe.run()

    # Then Meta answered, yet the lane stays stopped and the operator's, and later runs leave it
    assert probe.graph.token_checks == 1
    assert probe.mapping("ai")[0] == "Disabled"
    assert [(line["action"], line.get("by")) for line in report["lanes"]] == [("left", "operator")]
    assert probe.marks.read(LANES)["ai"].by == "operator"
    monkeypatch.setattr(MetaTokenCheck, "check", asked)
    assert probe.run()["lanes"] == [{"lane": "ai", "action": "left", "by": "operator"}]
    assert probe.mapping("ai")[0] == "Disabled"


def test_an_operators_pause_landing_as_the_probe_resumes_stops_the_lane_again(probe, monkeypatch):
    # Given the ai lane paused on a revoked token, since replaced, and an operator's pause landing
    # just before the probe raises the mapping (so their pause found the mapping stopped)
    probe.paused_itself("ai", "meta_token_invalid")
    run_at = LaneMappings.run_at

    def operator_pauses_first(mappings: LaneMappings, uuid: str, level: int) -> None:
        probe.marks.paused_by_operator("ai")
        run_at(mappings, uuid, level)

    monkeypatch.setattr(LaneMappings, "run_at", operator_pauses_first)

    # When the probe runs
    report = probe.run()

    # Then the lane is stopped again, and held by the operator
    assert probe.mapping("ai")[0] == "Disabled"
    assert [(line["action"], line.get("by")) for line in report["lanes"]] == [("left", "operator")]
    assert probe.marks.read(LANES)["ai"].by == "operator"


def test_a_stop_waits_out_a_mapping_lambda_is_still_changing(probe):
    # Given the ai lane's mapping running, and Lambda refusing the first change to it (mid-change)
    client = boto3.client("lambda", region_name=REGION)
    client.update_event_source_mapping(UUID=probe.mappings["ai"], Enabled=True)
    refused: list[str] = []

    def mid_change(**_: object) -> None:
        if not refused:
            refused.append("UpdateEventSourceMapping")
            error = {"Code": "ResourceInUseException", "Message": "the mapping is being updated"}
            raise ClientError({"Error": error}, "UpdateEventSourceMapping")

    client.meta.events.register("before-call.lambda.UpdateEventSourceMapping", mid_change)
    waited: list[float] = []
    # When the probe stops it
    LaneMappings(client, sleep=waited.append).stop(probe.mappings["ai"])
    # Then it tried again a second later, and the lane is stopped
    assert (refused, waited) == (["UpdateEventSourceMapping"], [1.0])
    assert probe.mapping("ai")[0] == "Disabled"
