"""A lane that pauses itself, end to end on moto under the consumer's own role: the lane's model
refused (the ai and engagement lanes), its consumer disables its own event source mapping (the
one update its role may make) and keeps the work in the lane, not in its DLQ."""

from __future__ import annotations

import contextlib
import dataclasses
import json

import boto3
import pytest

from pipeline.settings.lane_policy import FailureRatePause
from pipeline.tasks import ai
from stacks import runtime_env
from tests.support import roles
from tests.support.aws import REGION, deploy
from tests.support.mappings import mapped_function
from tests.unit.consumer.harness import LaneHarness
from tests.unit.consumer.lane_env import with_lane
from tests.unit.tasks.payloads import comment_change, feed

SHOP = "shop-1"


@contextlib.contextmanager
def _lane(lane: str, env_local):
    function = f"lanes-local-{lane}-consumer"
    made = deploy(env_local)
    uuid = mapped_function(made.queue_arns[lane], function)
    made = dataclasses.replace(made, mapping_ids={lane: uuid})
    with roles.enforced(made) as grants:
        environ = {
            **runtime_env.consumer(env_local, env_local.lane(lane), made.resources, json.dumps),
            "AWS_REGION": REGION,
            "AWS_LAMBDA_FUNCTION_NAME": function,
            **roles.role_credentials(grants, roles.CONSUMER, lane),
        }
        yield LaneHarness(lane, environ, made.queue_arns[lane]), uuid


@pytest.fixture(params=["ai", "engagement"])
def paused_lane(request, aws, env_local, atomic, model):
    with _lane(request.param, env_local) as found:
        yield found


@pytest.fixture
def engagement_lane(aws, env_local, atomic, model):
    with _lane("engagement", env_local) as found:
        yield found


def _work(h: LaneHarness) -> None:
    if h.lane == "ai":
        payload = {"conversation": "conv-1", "message_id": "m1", "text": "hi", "sent_at": 1000.0}
        h.send(h.job_row("job-1", payload, tenant=SHOP, kind=ai.INBOUND))
    else:
        h.send(h.webhook_row(feed(comment_change("c-1", "When do you open?")), tenant=SHOP, lane="engagement"))


def _refused_model(environ: dict[str, str]) -> dict[str, str]:
    """The lane told to call a model its role was not granted: Bedrock's answer is access denied."""
    if json.loads(environ["LANE"])["task"] == "ai":
        environ = with_lane(environ, options={"debounce_seconds": "0"})
    settings = json.loads(environ["MODEL_SETTINGS"])
    return {**environ, "MODEL_SETTINGS": json.dumps({**settings, "model_id": "anthropic.claude-3-opus-20240229-v1:0"})}


def test_a_refused_model_pauses_the_lane_and_keeps_the_turn(paused_lane, metrics):
    h, uuid = paused_lane
    lambda_ = boto3.client("lambda", region_name=REGION)
    assert lambda_.get_event_source_mapping(UUID=uuid)["State"] == "Enabled"
    _work(h)
    handler = h.handler(_refused_model(h.environ))
    for _ in range(3):  # on the ai lane, the stamp, then the turn
        response, _ = h.poll(handler)
        assert response["batchItemFailures"] == []
    # Then the lane's mapping is disabled by the consumer itself, the turn waits in the lane, and
    # the pause is counted with its reason
    assert lambda_.get_event_source_mapping(UUID=uuid)["State"] == "Disabled"
    assert h.dead_letters() == []
    assert h.depth() >= 1
    assert ("LanePaused", {"Lane": h.lane, "Reason": "model_refused"}) in metrics()
    # And the pause is marked as the lane's own, which is what lets the probe resume it
    mark = h.environ["STATE_TABLE"]
    item = boto3.client("dynamodb", region_name=REGION).get_item(
        TableName=mark, Key={"pk": {"S": f"lane-pause#{h.lane}"}}
    )["Item"]
    assert (item["by"]["S"], item["reason"]["S"]) == ("lane", "model_refused")


def test_a_model_not_callable_on_demand_pauses_the_lane_and_dead_letters_nothing(engagement_lane, metrics, model):
    # Given the engagement lane's model offered in the region only through an inference profile
    h, uuid = engagement_lane
    model.configure(on_demand=False)
    h.send(h.webhook_row(feed(comment_change("c-1", "When do you open?")), tenant=SHOP, lane="engagement"))
    response, _ = h.poll(h.handler(h.environ))
    # Then the record waits in the lane, and the lane pauses itself (which pages) instead of
    # sending every record to the DLQ
    assert response["batchItemFailures"] == []
    assert h.dead_letters() == []
    assert h.depth() == 1
    assert boto3.client("lambda", region_name=REGION).get_event_source_mapping(UUID=uuid)["State"] == "Disabled"
    assert ("LanePaused", {"Lane": "engagement", "Reason": "model_refused"}) in metrics()


def test_a_model_failing_most_calls_pauses_the_lane_with_its_reason(engagement_lane, metrics, model):
    # Given the engagement lane watching its model's failures over 2 calls, and Bedrock unavailable
    h, uuid = engagement_lane
    model.configure(failure_rate=1.0, failure_code="ServiceUnavailableException")
    environ = with_lane(h.environ, pause_on_failures=FailureRatePause(window_seconds=60, min_calls=2))
    for n in range(2):
        h.send(h.webhook_row(feed(comment_change(f"c-{n}", "When do you open?")), tenant=SHOP, lane="engagement"))

    # When one instance takes both
    response, _ = h.poll(h.handler(environ))

    # Then the first is retried as any transient failure, the second is held once the window trips,
    # and the lane paused itself for its model failing, with its mark
    assert len(response["batchItemFailures"]) == 1
    assert boto3.client("lambda", region_name=REGION).get_event_source_mapping(UUID=uuid)["State"] == "Disabled"
    assert h.dead_letters() == []
    assert ("LanePaused", {"Lane": "engagement", "Reason": "model_failing"}) in metrics()
    item = boto3.client("dynamodb", region_name=REGION).get_item(
        TableName=h.environ["STATE_TABLE"], Key={"pk": {"S": "lane-pause#engagement"}}
    )["Item"]
    assert (item["by"]["S"], item["reason"]["S"]) == ("lane", "model_failing")
