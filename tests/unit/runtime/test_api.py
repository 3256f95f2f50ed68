"""The local API's part of API Gateway: a bucket per route from the stage's settings, 429 past it."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from local_aws.api import ApiServer, Route, route_throttles
from local_aws.functions import Invocation

STAGE = {
    "DefaultRouteSettings": {"ThrottlingRateLimit": 0.001, "ThrottlingBurstLimit": 1},
    "RouteSettings": {
        "POST /webhooks/meta": {"ThrottlingRateLimit": 0.001, "ThrottlingBurstLimit": 3},
        "POST /jobs": {"ThrottlingRateLimit": 0.001, "ThrottlingBurstLimit": 2},
    },
}


class Answers:
    """A function behind a route that answers 200 and keeps the events it got."""

    def __init__(self) -> None:
        self.events: list[dict] = []

    def invoke(self, event: dict) -> Invocation:
        self.events.append(event)
        return Invocation(result={"statusCode": 200, "body": "ok"})


@pytest.fixture
def api() -> Iterator[tuple[ApiServer, Answers]]:
    function = Answers()
    bucket = route_throttles(STAGE)
    routes = [
        Route(method, path, function, iam=False, throttle=bucket(f"{method} {path}"))  # type: ignore[arg-type]
        for method, path in (("POST", "/webhooks/meta"), ("GET", "/webhooks/meta"), ("POST", "/jobs"))
    ]
    server = ApiServer(routes, port=0, on_request=lambda *_: None)
    server.start()
    yield server, function
    server.stop()


def _statuses(server: ApiServer, method: str, path: str, count: int) -> list[int]:
    return [server.handle(method, path, {}, b"", "127.0.0.1")[0] for _ in range(count)]


def test_each_route_spends_its_own_bucket_and_answers_429_past_it(api):
    server, function = api

    # When each route is called past its burst, the webhook first
    webhook = _statuses(server, "POST", "/webhooks/meta", 5)
    jobs = _statuses(server, "POST", "/jobs", 4)
    handshake = _statuses(server, "GET", "/webhooks/meta", 2)

    # Then the webhook's flood did not spend the jobs route's bucket, nor the handshake's, which
    # has the stage default; and a refused request never reached the function
    assert webhook == [200, 200, 200, 429, 429]
    assert jobs == [200, 200, 429, 429]
    assert handshake == [200, 429]
    assert len(function.events) == 3 + 2 + 1


def test_a_route_without_settings_of_its_own_takes_the_stage_default():
    bucket = route_throttles({"DefaultRouteSettings": {"ThrottlingRateLimit": 0.001, "ThrottlingBurstLimit": 1}})(
        "GET /anything"
    )
    assert [bucket.take(), bucket.take()] == [True, False]


def test_an_iam_route_passes_the_callers_identity_and_refuses_a_request_without_sigv4():
    # Given the jobs route, IAM-authorised
    function = Answers()
    route = Route("POST", "/jobs", function, iam=True, throttle=route_throttles({})("POST /jobs"))  # type: ignore[arg-type]
    server = ApiServer([route], port=0, on_request=lambda *_: None)
    server.start()
    try:
        # When a SigV4-signed caller acting as partner-acme posts, and then one with no signature
        signed = {
            "authorization": "AWS4-HMAC-SHA256 Credential=partner-acme/20270115/us-east-1/execute-api/aws4_request, "
            "SignedHeaders=host;x-amz-date, Signature=00"
        }
        assert server.handle("POST", "/jobs", signed, b"{}", "127.0.0.1")[0] == 200
        assert server.handle("POST", "/jobs", {"authorization": "Bearer x"}, b"{}", "127.0.0.1")[0] == 403
    finally:
        server.stop()

    # Then the function saw only the first, with the identity API Gateway's IAM authorizer gives
    [event] = function.events
    iam = event["requestContext"]["authorizer"]["iam"]
    assert iam["userArn"] == "arn:aws:sts::123456789012:assumed-role/partner-acme/local"
    assert iam["accountId"] == "123456789012"
