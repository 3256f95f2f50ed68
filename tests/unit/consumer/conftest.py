"""Consumer fixtures: a harness per lane, with moto requests made atomic (as AWS's are)."""

from __future__ import annotations

import pytest

from tests.unit.consumer.handler_seams import atomic_requests, repoint_consumer_logs
from tests.unit.consumer.harness import LaneHarness


@pytest.fixture(autouse=True)
def _consumer_logs_to_current_stdout():
    repoint_consumer_logs()


@pytest.fixture
def atomic(monkeypatch):
    with atomic_requests(monkeypatch):
        yield


@pytest.fixture
def lane(deployed, consumer_environ, atomic):
    """A factory: `lane("bulk")` gives that lane's harness."""

    def make(name: str) -> LaneHarness:
        return LaneHarness(name, consumer_environ(name), deployed.queue_arns[name])

    return make
