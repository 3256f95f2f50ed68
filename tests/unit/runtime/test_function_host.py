"""The runtime's Lambda part: instances of a function start one at a time even when a burst finds
none warm, because in one interpreter their set-up shares module-level state."""

from __future__ import annotations

import threading

from ops.runtime.capture import OutputCapture
from ops.runtime.functions import MAX_INSTANCES, FunctionConfig, FunctionHost
from ops.runtime.metrics import MetricsStore
from tests.unit.runtime import overlapping_init


def test_a_burst_of_cold_starts_initialises_its_instances_one_at_a_time_and_all_answer():
    config = FunctionConfig(
        name="burst",
        arn="arn:aws:lambda:us-east-1:123456789012:function:burst",
        handler="tests.unit.runtime.overlapping_init.handler",
        environment={},
        timeout_seconds=10,
        memory_mb=128,
    )
    host = FunctionHost(config, capture=OutputCapture(), metrics=MetricsStore())
    outcomes = []
    start = threading.Barrier(MAX_INSTANCES)

    def call() -> None:
        start.wait()
        outcomes.append(host.invoke({}))

    # Given as many simultaneous invocations as the function may run, with no warm instance
    callers = [threading.Thread(target=call) for _ in range(MAX_INSTANCES)]
    for caller in callers:
        caller.start()
    for caller in callers:
        caller.join(timeout=30)
    # Then each was answered by a cold instance, and no two instances were being set up at once
    assert [o.ok for o in outcomes] == [True] * MAX_INSTANCES
    assert host.stats.cold_starts == MAX_INSTANCES
    assert overlapping_init.overlaps == 0
