"""What Meta's webhook door costs a month, each way in (`WebhookDoor`, stacks/config/doors.py):
the HTTP API route, one request charge a delivery and its route's detailed metrics, or the door
function's own URL, which Lambda charges nothing for beyond the invocation both doors pay
(the lanes' Lambda cost). `lanectl plan` shows both for an environment, whichever it uses.
"""

from __future__ import annotations

from dataclasses import dataclass

from ops.cost.prices import LIST_PRICES, Prices
from ops.cost.pricing import ROUTE_METRICS, entry
from stacks.config.doors import WebhookDoor, WebhookDoorKind
from stacks.config.environments import Environment


@dataclass(frozen=True)
class DoorCost:
    kind: WebhookDoorKind
    requests: float
    """Deliveries a month (the subscription handshake is a handful)."""
    api: float
    """API Gateway's request charge."""
    route_metrics: float
    """The webhook route's detailed metrics, which its 5xx alarm reads; a function URL's
    (Url5xxCount and the rest) are Lambda's own, free."""
    bound: str

    @property
    def total(self) -> float:
        return self.api + self.route_metrics


def webhook_deliveries(env: Environment, average_fraction: float, prices: Prices = LIST_PRICES) -> float:
    return sum(
        lane.traffic.peak_per_second * average_fraction * prices.seconds_per_month
        for lane in env.lanes
        if entry(lane) == "webhook"
    )


def door_costs(
    env: Environment, average_fraction: float, prices: Prices = LIST_PRICES
) -> dict[WebhookDoorKind, DoorCost]:
    """Both doors priced for `env`'s traffic, whichever it uses."""
    requests = webhook_deliveries(env, average_fraction, prices)
    throttle = env.api.webhook
    # What the function URL door would reserve here, whichever door the environment uses.
    reservation = WebhookDoor(WebhookDoorKind.FUNCTION_URL, env.webhook_door.reserved_concurrency).reservation(throttle)
    return {
        WebhookDoorKind.HTTP_API: DoorCost(
            WebhookDoorKind.HTTP_API,
            requests,
            api=requests / 1_000_000 * prices.http_api_per_million_requests,
            route_metrics=ROUTE_METRICS * prices.metric_per_month,
            bound=f"route throttle {throttle.rate_limit:g}/s, burst {throttle.burst_limit}",
        ),
        WebhookDoorKind.FUNCTION_URL: DoorCost(
            WebhookDoorKind.FUNCTION_URL,
            requests,
            api=0.0,
            route_metrics=0.0,
            bound=f"{reservation} reserved instances",
        ),
    }
