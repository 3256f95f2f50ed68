"""Alarms on what Lambda and API Gateway count for an HTTP door, not what the door counts itself.

A door's own failure counts (WebhookFailed, JobFailed, ErasureFailed) are emitted inside its
handler; a timeout, an out-of-memory kill, a failed initialisation or a throttle answers 5xx and
emits none of them. Lambda counts those as the function's `Errors` and `Throttles`, a run near its
timeout shows in `Duration`, and API Gateway counts every 5xx answered on a route (detailed
metrics, turned on per route in stacks/constructs/ingress.py), or, for a door on a Lambda function
URL, Lambda counts every 5xx its URL answered (`Url5xxCount`). Each is a `Notice.EVENT`:
each is an incident on-call looks at, not a state whose end must page again; missing data (no
traffic) is not breaching.
"""

from __future__ import annotations

from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_lambda as lambda_
from constructs import Construct

from stacks.constructs.alarms import Notice, OnCall

DURATION_SHARE = 0.8
"""A run past this share of the timeout pages: the next slower call times it out."""
API_NAMESPACE = "AWS/ApiGateway"
API_STAGE = "$default"
LAMBDA_NAMESPACE = "AWS/Lambda"

_AT_LEAST = cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD


def function_alarms(
    scope: Construct, on_call: OnCall, prefix: str, function: lambda_.Function, timeout_seconds: int, what: str
) -> list[cloudwatch.Alarm]:
    """Errors, throttles and a run near the timeout, for one door's function."""
    period = on_call.period()
    near = round(timeout_seconds * 1000 * DURATION_SHARE)
    see = "See docs/RUNBOOK.md#door-lambda-errors."
    watched = (
        (
            "LambdaErrors",
            function.metric_errors(period=period, statistic="Sum"),
            1,
            "Lambda counted the function failing (a timeout, an out-of-memory kill, a failed start or a crash "
            "outside the handler's own error handling), each answered 5xx.",
        ),
        (
            "LambdaThrottles",
            function.metric_throttles(period=period, statistic="Sum"),
            1,
            "Lambda throttled the function (its reservation or the account's concurrency is spent); each "
            "throttled request was refused (5xx behind the API, 429 on a function URL).",
        ),
        (
            "LambdaNearTimeout",
            function.metric_duration(period=period, statistic="Maximum"),
            near,
            f"a run took at least {near} ms of its {timeout_seconds} s timeout: AWS is slow for it, and a "
            "slower call times it out.",
        ),
    )
    return [
        on_call.alarm(
            scope,
            f"{prefix}{name}",
            metric=metric,
            threshold=threshold,
            comparison=_AT_LEAST,
            evaluation_periods=1,
            notice=Notice.EVENT,
            description=f"{what}: {says} {see}",
        )
        for name, metric, threshold, says in watched
    ]


def route_5xx_alarm(
    scope: Construct, on_call: OnCall, construct_id: str, api_id: str, route_key: str, threshold: int = 1
) -> cloudwatch.Alarm:
    """Every 5xx API Gateway answered on one route, whoever made it: the function, Lambda, or API
    Gateway itself (an integration it could not invoke). `threshold` a period: one, but on a route
    whose function answers 503 by design (the jobs API shedding) as many as its shed alarm's."""
    method, resource = route_key.split(" ", 1)
    return on_call.alarm(
        scope,
        construct_id,
        metric=cloudwatch.Metric(
            namespace=API_NAMESPACE,
            metric_name="5xx",
            dimensions_map={"ApiId": api_id, "Stage": API_STAGE, "Method": method, "Resource": resource},
            period=on_call.period(),
            statistic="Sum",
        ),
        threshold=threshold,
        comparison=_AT_LEAST,
        evaluation_periods=1,
        notice=Notice.EVENT,
        description=f"{route_key} answered {threshold} or more 5xx in a period (API Gateway's count, whatever "
        "failed). See docs/RUNBOOK.md#route-5xx.",
    )


def url_5xx_alarm(
    scope: Construct, on_call: OnCall, construct_id: str, function: lambda_.IFunction
) -> cloudwatch.Alarm:
    """Every 5xx a function's URL answered, whoever made it: the function, or Lambda (a failed
    invocation). A throttle is a 429 there, which the function's Throttles alarm counts."""
    return on_call.alarm(
        scope,
        construct_id,
        metric=cloudwatch.Metric(
            namespace=LAMBDA_NAMESPACE,
            metric_name="Url5xxCount",
            dimensions_map={"FunctionName": function.function_name},
            period=on_call.period(),
            statistic="Sum",
        ),
        threshold=1,
        comparison=_AT_LEAST,
        evaluation_periods=1,
        notice=Notice.EVENT,
        description="The webhook's function URL answered a 5xx in a period (Lambda's count, whatever failed). "
        "See docs/RUNBOOK.md#route-5xx.",
    )


def route_alarm_id(route_key: str) -> str:
    """`POST /webhooks/meta` -> `RoutePostWebhooksMeta5xx`."""
    words = "".join(c if c.isalnum() else " " for c in route_key).split()
    return "Route" + "".join(word.capitalize() for word in words) + "5xx"


__all__ = ["function_alarms", "route_5xx_alarm", "route_alarm_id", "url_5xx_alarm"]
