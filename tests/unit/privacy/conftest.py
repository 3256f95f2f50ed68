"""The whole write path over one moto backend, run by hand: the webhook door, the jobs API, Meta's
data-deletion callback and every lane's consumer (through the consumer harness, which plays the
event source mapping), so a test can put traffic through the real handlers and then look at
everything they left in every table."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from typing import Any

import boto3
import pytest

from ops.cli import Runtime, run
from ops.output import Console
from pipeline.domain.erasure import requests as erasure
from pipeline.domain.erasure import signed_request
from pipeline.handlers import erasure as erasure_handler
from pipeline.handlers import ingress
from pipeline.handlers import jobs as jobs_handler
from tests.support.aws import META_APP_SECRET, REGION, handler_clients, http_api_event
from tests.support.lanectl_stack import publish, table_outputs
from tests.unit.consumer.conftest import _consumer_logs_to_current_stdout, atomic  # noqa: F401
from tests.unit.consumer.harness import LaneHarness
from tests.unit.consumer.lane_env import with_lane, without_auto_reply_debounce
from tests.unit.ingress.conftest import NOW, Clock, encode, post
from tests.unit.jobs.conftest import submit
from tests.unit.ops.support import FakeClock
from tests.unit.tasks.payloads import FakeVendor

TABLES = ("webhook-log", "jobs", "state", "data")
HOST = "api.example.test"


class Pipeline:
    """Every handler reads one clock, which stands still unless a test moves it (the door's tests'
    time, when their Meta secret's previous app secret is still in force)."""

    def __init__(
        self,
        deployed: Any,
        ingress_environ: Mapping[str, str],
        jobs_environ: Mapping[str, str],
        erasure_environ: Mapping[str, str],
        make_env,
    ):
        self.deployed = deployed
        self.clock = Clock(NOW)
        self.door = ingress.create_handler(ingress_environ, clients=handler_clients(ingress_environ), clock=self.clock)
        self.api = jobs_handler.create_handler(jobs_environ, clients=handler_clients(jobs_environ), clock=self.clock)
        self.callback = erasure_handler.create_handler(
            erasure_environ, clients=handler_clients(erasure_environ), clock=self.clock
        )
        self.vendor = FakeVendor()
        self.lanes: dict[str, LaneHarness] = {}
        self.consumers: dict[str, Any] = {}
        for name in deployed.resources.queue_urls:
            harness = LaneHarness(name, make_env(name), deployed.queue_arns[name])
            # Reply turns and an erasure's second pass run at once, so one drain finishes them.
            options = {"ai": {"debounce_seconds": "0"}, "bulk": {"erase_again_seconds": "0"}}.get(name)
            environ = with_lane(harness.environ, options=options) if options else None
            if name == "messages":
                environ = without_auto_reply_debounce(harness.environ)
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

    def forget(self, user_id: str, *, secret: str = META_APP_SECRET) -> dict[str, Any]:
        """Meta's data-deletion callback for `user_id`, signed with `secret`."""
        return self.callback(deletion_callback(signed_request.sign(meta_payload(user_id), secret)), None)

    def erasure_status(self, code: str) -> dict[str, Any]:
        return self.callback(erasure_status(code), None)

    def drain(self, rounds: int = 20, lanes: tuple[str, ...] | None = None) -> None:
        """The consumers of `lanes` (every lane by default), until none of them holds a message
        (follow-ups included)."""
        for _ in range(rounds):
            busy = [
                name for name, harness in self.lanes.items() if (lanes is None or name in lanes) and harness.depth() > 0
            ]
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


def meta_payload(user_id: str) -> dict[str, Any]:
    return {"algorithm": "HMAC-SHA256", "user_id": user_id, "issued_at": int(NOW), "expires": 0}


def deletion_callback(signed: str | None, *, host: str = HOST) -> dict[str, Any]:
    """Meta's POST to the data-deletion callback: a form with the signed request."""
    body = "" if signed is None else f"signed_request={signed}"
    headers = {"content-type": "application/x-www-form-urlencoded", "host": host, "x-forwarded-proto": "https"}
    return http_api_event("POST", erasure.CALLBACK_PATH, body=body, headers=headers)


def erasure_status(code: str) -> dict[str, Any]:
    path = f"{erasure.CALLBACK_PATH}/{code}"
    return http_api_event("GET", path, path_parameters={"code": code}, headers={"host": HOST})


@pytest.fixture
def pipeline(deployed, ingress_environ, jobs_environ, erasure_environ, consumer_environ, atomic) -> Pipeline:  # noqa: F811
    return Pipeline(deployed, ingress_environ, jobs_environ, erasure_environ, consumer_environ)


@pytest.fixture
def stack(pipeline) -> dict[str, str]:
    """`lanes-dev` as lanectl finds it: outputs naming the tables, the erasure lane's queue and the
    sender key that the pipeline on moto uses."""
    return publish(table_outputs(pipeline) | {"BulkQueueUrl": pipeline.deployed.resources.queue_urls[erasure.LANE]})


@pytest.fixture
def lanectl(capsys, pipeline):
    """`lanectl` in this process, on the pipeline's clock: its exit code, stdout and stderr."""

    def invoke(*argv: str) -> tuple[int, str, str]:
        capsys.readouterr()  # what the pipeline's handlers printed before: not lanectl's
        environ = {k: v for k, v in os.environ.items() if not k.startswith("LANES_")}
        clock = FakeClock(now=pipeline.clock.now)  # the pipeline's time: an erasure is due a week after
        code = run(list(argv), Runtime(console=Console(), environ=environ, clock=clock, sleep=clock.sleep))
        captured = capsys.readouterr()
        return code, captured.out, captured.err

    return invoke
