"""The HTTP doors page on what Lambda and API Gateway count, which a failure outside the handler
(a timeout, an out-of-memory kill, a failed start, a throttle) still reaches: their functions'
Errors, Throttles and a run near the timeout, and each route's 5xx (stacks/constructs/function_alarms.py)."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.xdist_group("synth")

DOORS = ("pipeline.handlers.ingress.handler", "pipeline.handlers.jobs.handler", "pipeline.handlers.erasure.handler")
ROUTES = (
    "POST /webhooks/meta",
    "POST /jobs",
    "GET /jobs/{id}",
    "POST /meta/data-deletion",
    "GET /meta/data-deletion/{code}",
)


def _alarms(synthesized) -> list[dict]:
    return [a["Properties"] for a in synthesized.resources("AWS::CloudWatch::Alarm").values()]


def _topic(synthesized) -> dict:
    (topic_id,) = synthesized.resources("AWS::SNS::Topic")
    return {"Ref": topic_id}


@pytest.mark.parametrize("handler", DOORS)
def test_each_door_pages_on_its_functions_errors_throttles_and_runs_near_its_timeout(synthesized, handler):
    (function_id,) = [
        logical_id
        for logical_id, f in synthesized.resources("AWS::Lambda::Function").items()
        if f["Properties"]["Handler"] == handler
    ]
    timeout_ms = synthesized.resource(function_id)["Properties"]["Timeout"] * 1000
    on_function = {
        a["MetricName"]: a
        for a in _alarms(synthesized)
        if a.get("Namespace") == "AWS/Lambda"
        and a.get("Dimensions") == [{"Name": "FunctionName", "Value": {"Ref": function_id}}]
    }
    period = synthesized.env.alarms.period_seconds
    # Then one failed or throttled invocation in a period pages; so does a run past 80% of the timeout
    # (and a webhook on a function URL on every 5xx its URL answered)
    url = handler == DOORS[0] and synthesized.env.webhook_door.function_url
    assert {name: (a["Statistic"], a["Threshold"], a["Period"]) for name, a in on_function.items()} == {
        "Errors": ("Sum", 1, period),
        "Throttles": ("Sum", 1, period),
        "Duration": ("Maximum", timeout_ms * 0.8, period),
        **({"Url5xxCount": ("Sum", 1, period)} if url else {}),
    }
    for alarm in on_function.values():
        assert alarm["ComparisonOperator"] == "GreaterThanOrEqualToThreshold"
        assert alarm["EvaluationPeriods"] == 1
        # no traffic is not a failure, and the page is the incident: no second page when it ends
        assert alarm["TreatMissingData"] == "notBreaching"
        assert alarm["AlarmActions"] == [_topic(synthesized)]
        assert "OKActions" not in alarm


def test_each_route_has_detailed_metrics_and_pages_on_its_5xx(synthesized):
    (stage,) = synthesized.resources("AWS::ApiGatewayV2::Stage").values()
    settings = stage["Properties"]["RouteSettings"]
    (api_id,) = synthesized.resources("AWS::ApiGatewayV2::Api")
    by_route = {
        f"{d['Method']} {d['Resource']}": a
        for a in _alarms(synthesized)
        if a.get("Namespace") == "AWS/ApiGateway"
        for d in [{x["Name"]: x["Value"] for x in a["Dimensions"]}]
    }
    # (a webhook on a function URL is no route: its 5xx alarm is Lambda's, tests/infra/test_webhook_door.py)
    routes = [r for r in ROUTES if not (synthesized.env.webhook_door.function_url and r.endswith("/webhooks/meta"))]
    assert sorted(by_route) == sorted(routes)
    for route, alarm in by_route.items():
        # API Gateway writes a route's metrics only where its detailed metrics are on
        assert settings[route]["DetailedMetricsEnabled"] is True
        dimensions = {x["Name"]: x["Value"] for x in alarm["Dimensions"]}
        assert (dimensions["ApiId"], dimensions["Stage"]) == ({"Ref": api_id}, "$default")
        # (POST /jobs answers 503 when admission sheds: by design, so it pages as the sheds do)
        threshold = synthesized.env.alarms.jobs_shed_threshold if route == "POST /jobs" else 1
        assert (alarm["MetricName"], alarm["Statistic"], alarm["Threshold"]) == ("5xx", "Sum", threshold)
        assert alarm["TreatMissingData"] == "notBreaching"
        assert alarm["AlarmActions"] == [_topic(synthesized)]
