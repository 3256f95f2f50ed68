"""The runtime's Lambda part: instances of a function start one at a time even when a burst finds
none warm, because in one interpreter their set-up shares module-level state."""

from __future__ import annotations

import sys
import threading

from local_aws.capture import OutputCapture
from local_aws.functions import MAX_INSTANCES, FunctionConfig, FunctionHost
from local_aws.metrics import MetricsStore
from tests.unit.runtime import overlapping_init


def _config(name: str, handler: str) -> FunctionConfig:
    return FunctionConfig(
        name=name,
        arn=f"arn:aws:lambda:us-east-1:123456789012:function:{name}",
        handler=handler,
        environment={},
        timeout_seconds=10,
        memory_mb=128,
    )


def test_a_burst_of_cold_starts_initialises_its_instances_one_at_a_time_and_all_answer():
    config = _config("burst", "tests.unit.runtime.overlapping_init.handler")
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


def test_a_host_imports_its_handler_code_when_it_is_made_not_at_the_first_cold_start():
    # Given a handler module nothing has imported yet
    module = "tests.unit.runtime.imported_on_hosting"
    sys.modules.pop(module, None)
    config = _config("hosted", f"{module}.handler")
    # When a host is made for it
    host = FunctionHost(config, capture=OutputCapture(), metrics=MetricsStore())
    # Then its code is loaded before any invocation, so no cold start imports it beside a
    # thread already reading the same package (CPython's import locks can fail both)
    assert module in sys.modules
    assert host.stats.cold_starts == 0
    assert host.invoke({}).result == {"hosted": True}


def test_a_handler_that_cannot_be_imported_fails_its_invocations_not_the_reconfiguration():
    host = FunctionHost(
        _config("hosted", "tests.unit.runtime.imported_on_hosting.handler"),
        capture=OutputCapture(),
        metrics=MetricsStore(),
    )
    # When an operator points the function at a module that does not exist
    changed = host.reconfigure(_config("hosted", "tests.unit.runtime.no_such_module.handler"))
    # Then the change is taken, and each invocation reports the import error, as Lambda would
    assert changed
    outcome = host.invoke({})
    assert not outcome.ok
    assert "No module named 'tests.unit.runtime.no_such_module'" in (outcome.error or "")
