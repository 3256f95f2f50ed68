"""The local environment's lanes: the catalogue's, on clocks in seconds."""

from __future__ import annotations

from collections.abc import Mapping

from stacks.config.lane_overrides import LaneOverride
from stacks.config.lanes import AI, BULK, ENGAGEMENT, MESSAGES, SCHEDULED, FailureRatePause, RetryPolicy, Tick, Traffic

# The local environment runs on one machine against an in-process emulator, so its times are
# seconds, not minutes, and its queues are kept shallow, so a demo's backlog drains in seconds.
# Same lanes, same rules, shorter clocks. Reservations are off locally, so the catalogue's
# reserved concurrency stands unused.
LOCAL_OVERRIDES: Mapping[str, LaneOverride] = {
    MESSAGES: LaneOverride(
        objective_seconds=10,
        timeout_seconds=5,
        max_concurrency=4,
        retry=RetryPolicy(0.5, 4),
        defer_seconds=1,
        service_seconds=0.1,
        traffic=Traffic(peak_per_second=5),
    ),
    ENGAGEMENT: LaneOverride(
        objective_seconds=20,
        timeout_seconds=5,
        max_concurrency=3,
        retry=RetryPolicy(0.5, 5),
        defer_seconds=2,
        default_expiry_seconds=120,
        service_seconds=0.3,
        traffic=Traffic(peak_per_second=2),
    ),
    AI: LaneOverride(
        objective_seconds=20,
        timeout_seconds=10,
        max_concurrency=3,
        retry=RetryPolicy(0.5, 5),
        defer_seconds=1,
        default_expiry_seconds=120,
        task_options=(("debounce_seconds", "1"), ("resolve_seconds", "1"), ("resolve_rounds", "3")),
        service_seconds=0.3,
        traffic=Traffic(peak_per_second=2),
        pause_on_failures=FailureRatePause(window_seconds=10, min_calls=6, failure_share=0.5),
    ),
    BULK: LaneOverride(
        objective_seconds=60,
        timeout_seconds=10,
        batch_window_seconds=2,
        max_concurrency=2,
        retry=RetryPolicy(1, 10),
        defer_seconds=2,
        default_expiry_seconds=600,
        # An erasure's second pass within the runtime's clock, not 15 minutes later.
        task_options=(("erase_again_seconds", "5"),),
        service_seconds=0.5,
        traffic=Traffic(peak_per_second=0.5),
    ),
    SCHEDULED: LaneOverride(
        objective_seconds=10,
        timeout_seconds=3,
        max_concurrency=2,
        retry=RetryPolicy(0.5, 2),
        default_expiry_seconds=5,
        tick=Tick(period_seconds=5, kind="scoring.tick"),
        service_seconds=0.1,
        traffic=Traffic(peak_per_second=0.2),
    ),
}
