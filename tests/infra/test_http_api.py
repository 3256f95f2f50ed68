"""The HTTP API: its routes, who may call each, and each route's throttle, in every environment.
Meta's webhook is one of its routes only where the environment's webhook door is the API's."""

from __future__ import annotations

import json

import pytest

pytestmark = pytest.mark.xdist_group("synth")


def test_http_api_routes_and_their_authorisation(synthesized):
    routes = {
        r["Properties"]["RouteKey"]: r["Properties"] for r in synthesized.resources("AWS::ApiGatewayV2::Route").values()
    }
    webhook = set() if synthesized.env.webhook_door.function_url else {"GET /webhooks/meta", "POST /webhooks/meta"}
    assert set(routes) == {
        *webhook,
        "POST /jobs",
        "GET /jobs/{id}",
        "POST /meta/data-deletion",
        "GET /meta/data-deletion/{code}",
    }
    for key in (*webhook, "POST /meta/data-deletion"):
        assert routes[key]["AuthorizationType"] == "NONE"  # HMAC-verified in the function
    # The erasure status page: its credential is the confirmation code in the path
    assert routes["GET /meta/data-deletion/{code}"]["AuthorizationType"] == "NONE"
    for key in ("POST /jobs", "GET /jobs/{id}"):
        assert routes[key]["AuthorizationType"] == "AWS_IAM"
    (api,) = synthesized.resources("AWS::ApiGatewayV2::Api").values()
    assert api["Properties"]["ProtocolType"] == "HTTP"


def test_each_route_is_throttled_on_its_own_and_the_stage_logs_access(synthesized):
    (stage_id,) = synthesized.resources("AWS::ApiGatewayV2::Stage")
    stage = synthesized.resource(stage_id)
    props = stage["Properties"]
    assert props["StageName"] == "$default"
    assert props["AutoDeploy"] is True
    api = synthesized.env.api

    def bucket(throttle):
        return {"ThrottlingBurstLimit": throttle.burst_limit, "ThrottlingRateLimit": throttle.rate_limit}

    # The webhook and the jobs routes have their own buckets; the handshake has the stage default.
    # Each route with a bucket also has its detailed metrics (its 5xx alarm reads them).
    detailed = {"DetailedMetricsEnabled": True}
    webhook = (
        {}
        if synthesized.env.webhook_door.function_url
        else {"POST /webhooks/meta": {**bucket(api.webhook), **detailed}}
    )
    assert props["RouteSettings"] == {
        **webhook,
        "POST /jobs": {**bucket(api.jobs), **detailed},
        "GET /jobs/{id}": {**bucket(api.jobs), **detailed},
        "POST /meta/data-deletion": {**bucket(api.erasure), **detailed},
        "GET /meta/data-deletion/{code}": {**bucket(api.erasure), **detailed},
    }
    assert props["DefaultRouteSettings"] == bucket(api.other)
    # And the stage is created after the routes it names (API Gateway refuses unknown route keys)
    routes = {
        logical_id
        for logical_id, r in synthesized.resources("AWS::ApiGatewayV2::Route").items()
        if r["Properties"]["RouteKey"] in props["RouteSettings"]
    }
    assert routes <= set(stage["DependsOn"])
    access = props["AccessLogSettings"]
    assert access["DestinationArn"]["Fn::GetAtt"][1] == "Arn"
    logged = json.loads(access["Format"])
    assert logged["status"] == "$context.status"
    # And the caller is logged by account only: identity.caller and identity.user carry a role's
    # session name (often a person's e-mail address); the jobs function logs the role without it
    assert logged["callerAccount"] == "$context.identity.accountId"
    assert not any(
        "identity.caller" in value or "identity.user" in value or "principalOrgId" in value for value in logged.values()
    )
