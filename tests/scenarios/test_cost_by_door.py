"""Scenario 10 prices this pipeline with each webhook door: the route's request charge, or none."""

from __future__ import annotations

import pytest

from bench.scenarios.cost_tally import by_door
from stacks.config.doors import WebhookDoorKind


def test_the_function_url_door_costs_the_route_less_api_gateways_request_charge():
    # Given the items of scenario 10's last run of this pipeline, per million webhooks (bench/REPORT.md)
    items = {
        "API Gateway": 1.00,
        "Lambda requests": 0.40,
        "Lambda compute": 0.87,
        "SQS": 1.19,
        "DynamoDB writes": 1.46,
        "DynamoDB reads": 0.12,
        "CloudWatch Logs": 0.70,
        "X-Ray traces": 0.00,
        "DynamoDB storage": 0.91,
    }
    # When it is priced by door
    doors = by_door(items)
    # Then the route pays everything, the function URL all but the request charge
    assert doors[WebhookDoorKind.HTTP_API] == pytest.approx(6.65)
    assert doors[WebhookDoorKind.FUNCTION_URL] == pytest.approx(5.65)
    # And against the common design's $8.59 that is 0.77x and 0.66x
    assert (round(doors[WebhookDoorKind.HTTP_API] / 8.59, 2), round(doors[WebhookDoorKind.FUNCTION_URL] / 8.59, 2)) == (
        0.77,
        0.66,
    )
