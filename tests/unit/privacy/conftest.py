"""The whole write path over one moto backend, run by hand: the webhook door, the jobs API and every
lane's consumer (through the consumer harness, which plays the event source mapping), so a test can
put traffic through the real handlers and then look at everything they left in every table."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import boto3
import pytest

from pipeline.handlers import ingress
from pipeline.handlers import jobs as jobs_handler
from tests.support.aws import REGION, handler_clients
from tests.unit.consumer.conftest import _consumer_logs_to_current_stdout, atomic  # noqa: F401
from tests.unit.consumer.harness import LaneHarness, with_lane
from tests.unit.ingress.conftest import NOW, Clock, encode, post
from tests.unit.jobs.conftest import submit
from tests.unit.tasks.payloads import FakeVendor

TABLES = ("webhook-log", "jobs", "state", "data")


class Pipeline:
    """Every handler reads one clock, which stands still unless a test moves it (the door's tests'
    time, when their Meta secret's previous app secret is still in force)."""

    def __init__(self, deployed: Any, ingress_environ: Mapping[str, str], jobs_environ: Mapping[str, str], make_env):
        self.deployed = deployed
        self.clock = Clock(NOW)
        self.door = ingress.create_handler(ingress_environ, clients=handler_clients(), clock=self.clock)
        self.api = jobs_handler.create_handler(jobs_environ, clients=handler_clients(), clock=self.clock)
        self.vendor = FakeVendor()
        self.lanes: dict[str, LaneHarness] = {}
        self.consumers: dict[str, Any] = {}
        for name in deployed.resources.queue_urls:
            harness = LaneHarness(name, make_env(name), deployed.queue_arns[name])
            # Reply turns run at once rather than a debounce later, so one drain finishes them.
            environ = with_lane(harness.environ, options={"debounce_seconds": "0"}) if name == "ai" else None
            self.lanes[name] = harness
            self.consumers[name] = harness.handler(environ, vendor=self.vendor, clock=self.clock)
        self._dynamodb = boto3.client("dynamodb", region_name=REGION)

    def deliver(self, payload: dict[str, Any] | bytes) -> dict[str, Any]:
        """A signed Meta delivery through the webhook door."""
        raw = payload if isinstance(payload, bytes) else encode(payload)
        return self.door(post(raw), None)

    def submit(self, job: dict[str, Any]) -> dict[str, Any]:
        """A job through the jobs API, as the local producer role."""
        return self.api(submit(job), None)

    def drain(self, rounds: int = 20) -> None:
        """Every lane's consumer, until no lane holds a message (follow-ups included)."""
        for _ in range(rounds):
            busy = [name for name, harness in self.lanes.items() if harness.depth() > 0]
            if not busy:
                return
            for name in busy:
                self.lanes[name].poll(self.consumers[name])
        raise AssertionError("the lanes did not drain")

    def items(self, table: str) -> list[dict[str, Any]]:
        found: list[dict[str, Any]] = []
        kwargs: dict[str, Any] = {"TableName": table, "ConsistentRead": True}
        while True:
            page = self._dynamodb.scan(**kwargs)
            found.extend(page["Items"])
            if "LastEvaluatedKey" not in page:
                return found
            kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]

    def dead_letters(self) -> dict[str, list[str]]:
        return {
            name: [json.loads(m["Body"]).get("kind") for m in harness.dead_letters()]
            for name, harness in self.lanes.items()
        }


@pytest.fixture
def pipeline(deployed, ingress_environ, jobs_environ, consumer_environ, atomic) -> Pipeline:  # noqa: F811
    return Pipeline(deployed, ingress_environ, jobs_environ, consumer_environ)
