"""The local runtime counts a door failing outside its handler as Lambda and API Gateway do: a
cold start that fails is the function's `Errors` (AWS/Lambda) and the route's `5xx`
(AWS/ApiGateway), which the doors' alarms read (stacks/constructs/function_alarms.py)."""

from __future__ import annotations

import time

from local_aws.alarms import ALARM, AlarmDefinition
from local_aws.api import ApiServer, Route, route_throttles
from local_aws.capture import OutputCapture
from local_aws.functions import FunctionConfig, FunctionHost
from local_aws.metrics import MetricsStore

NAME = "lanes-local-webhook"


def _errors_alarm() -> AlarmDefinition:
    """As the template's Errors alarm on the door reads, with the local environment's period."""
    return AlarmDefinition(
        logical_id="IngressWebhookLambdaErrors",
        name="lanes-local-IngressWebhookLambdaErrors",
        namespace="AWS/Lambda",
        metric_name="Errors",
        dimensions={"FunctionName": NAME},
        statistic="Sum",
        period=10,
        evaluation_periods=1,
        datapoints_to_alarm=1,
        threshold=1,
        comparison="GreaterThanOrEqualToThreshold",
        treat_missing="notBreaching",
        description="",
        alarm_actions=[],
        ok_actions=[],
    )


def test_a_door_that_cannot_start_is_counted_as_lambdas_errors_and_its_routes_5xx():
    # Given the webhook door deployed without the variables its cold start reads
    metrics = MetricsStore()
    config = FunctionConfig(
        name=NAME,
        arn=f"arn:aws:lambda:us-east-1:123456789012:function:{NAME}",
        handler="pipeline.handlers.ingress.handler",
        environment={},
        timeout_seconds=10,
        memory_mb=1024,
    )
    host = FunctionHost(config, capture=OutputCapture(), metrics=metrics)
    route = Route("POST", "/webhooks/meta", host, iam=False, throttle=route_throttles({})("POST /webhooks/meta"))
    answered: list[tuple[str, int]] = []
    server = ApiServer(
        [route], port=0, on_request=lambda *_: None, on_answered=lambda r, status: answered.append((r.key, status))
    )

    # When Meta delivers to it
    status = server.handle("POST", "/webhooks/meta", {}, b"{}", "127.0.0.1")[0]

    # Then Meta gets a 500 that no handler line counts; Lambda counts the failed start as an error,
    # which the door's Errors alarm pages on, and the route its 5xx
    assert status == 500
    assert answered == [("POST /webhooks/meta", 500)]
    assert metrics.total("AWS/Lambda", "Errors", {"FunctionName": NAME}) == 1
    state, _ = _errors_alarm().evaluate(metrics, time.time() + 0.5)
    assert state == ALARM
