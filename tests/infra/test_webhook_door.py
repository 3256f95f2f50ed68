"""Which door Meta's webhook comes in by (`WebhookDoor`, stacks/config/doors.py): the HTTP API's
route, or the door function's own URL, bounded by its reservation and paged on Lambda's URL 5xx."""

from __future__ import annotations

import dataclasses

import pytest

from stacks.config.doors import EdgeConfig, Throttle, WebhookDoor, WebhookDoorKind
from stacks.config.environments import ENVIRONMENTS

pytestmark = pytest.mark.xdist_group("synth")

INGRESS = "pipeline.handlers.ingress.handler"


def _webhook_function(synthesized) -> tuple[str, dict]:
    ((logical_id, function),) = [
        (i, f)
        for i, f in synthesized.resources("AWS::Lambda::Function").items()
        if f["Properties"]["Handler"] == INGRESS
    ]
    return logical_id, function["Properties"]


def test_a_function_url_door_is_the_webhook_functions_own_url_without_iam_and_bounded_by_its_reservation(synth_env):
    # Given dev, whose webhook door is a function URL
    synthesized = synth_env("dev")
    assert synthesized.env.webhook_door.function_url
    function_id, function = _webhook_function(synthesized)
    # Then the function has a URL anyone may call (Meta cannot sign for IAM; the function checks its signature)
    (url,) = synthesized.resources("AWS::Lambda::Url").values()
    assert url["Properties"]["TargetFunctionArn"] == {"Fn::GetAtt": [function_id, "Arn"]}
    assert url["Properties"]["AuthType"] == "NONE"
    assert "Cors" not in url["Properties"]
    # And its only bound is its reservation, from the route's throttle it replaces (100/s x 30 ms x 2)
    assert function["ReservedConcurrentExecutions"] == synthesized.env.webhook_reservation == 6
    # And the API has no webhook route left
    keys = {r["Properties"]["RouteKey"] for r in synthesized.resources("AWS::ApiGatewayV2::Route").values()}
    assert not any("/webhooks/meta" in key for key in keys)
    # And the URL Meta is given is the function URL with the webhook's path
    assert synthesized.template["Outputs"]["WebhookUrl"]["Value"] == {
        "Fn::Join": [
            "",
            [{"Fn::GetAtt": [next(iter(synthesized.resources("AWS::Lambda::Url"))), "FunctionUrl"]}, "webhooks/meta"],
        ]
    }


def test_a_function_url_door_pages_on_every_5xx_lambda_counts_for_its_url(synth_env):
    synthesized = synth_env("dev")
    function_id, _ = _webhook_function(synthesized)
    (topic_id,) = synthesized.resources("AWS::SNS::Topic")
    (alarm,) = [
        a["Properties"]
        for a in synthesized.resources("AWS::CloudWatch::Alarm").values()
        if a["Properties"].get("MetricName") == "Url5xxCount"
    ]
    assert (alarm["Namespace"], alarm["Dimensions"]) == (
        "AWS/Lambda",
        [{"Name": "FunctionName", "Value": {"Ref": function_id}}],
    )
    assert (alarm["Statistic"], alarm["ComparisonOperator"], alarm["Threshold"]) == (
        "Sum",
        "GreaterThanOrEqualToThreshold",
        1,
    )
    assert alarm["Period"] == synthesized.env.alarms.period_seconds
    assert alarm["AlarmActions"] == [{"Ref": topic_id}]


@pytest.mark.parametrize("name", ["staging", "prod", "local"])
def test_the_http_api_door_keeps_the_route_and_takes_no_reservation_of_its_own(synth_env, name):
    synthesized = synth_env(name)
    assert not synthesized.env.webhook_door.function_url
    _, function = _webhook_function(synthesized)
    assert synthesized.resources("AWS::Lambda::Url") == {}
    # The route's throttle bounds it; prod's reservations are the lanes' and the jobs API's
    assert "ReservedConcurrentExecutions" not in function
    # And the URL Meta is given is the API's, with the webhook's path
    api_url = synthesized.template["Outputs"]["ApiUrl"]["Value"]["Fn::Join"][1]
    assert api_url[-1] == "/"
    assert synthesized.template["Outputs"]["WebhookUrl"]["Value"] == {
        "Fn::Join": ["", [*api_url[:-1], "/webhooks/meta"]]
    }
    assert not [
        a
        for a in synthesized.resources("AWS::CloudWatch::Alarm").values()
        if a["Properties"].get("MetricName") == "Url5xxCount"
    ]


def test_the_reservation_is_sized_from_the_route_it_replaces_or_given():
    route = Throttle(rate_limit=2000, burst_limit=5000)
    assert WebhookDoor().reservation(route) == 0
    assert WebhookDoor(WebhookDoorKind.FUNCTION_URL).reservation(route) == 120
    assert WebhookDoor(WebhookDoorKind.FUNCTION_URL, reserved_concurrency=40).reservation(route) == 40
    with pytest.raises(ValueError, match="reserved_concurrency"):
        WebhookDoor(WebhookDoorKind.FUNCTION_URL, reserved_concurrency=0)


def test_the_function_url_door_refuses_the_edge_and_mutual_tls_which_front_the_route():
    dev = ENVIRONMENTS["dev"]
    with pytest.raises(ValueError, match="function URL door"):
        dataclasses.replace(dev, edge=EdgeConfig(enabled=True))
