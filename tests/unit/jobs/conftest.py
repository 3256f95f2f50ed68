"""Fixtures for the jobs API: a handler over moto with a controllable clock, the AWS calls it
makes, and ways to look at the job rows, tenant counters and lane messages it left behind."""

from __future__ import annotations

import json

import boto3
import pytest

from pipeline import schema
from pipeline.domain.jobs import requests as jobs
from pipeline.handlers import jobs as jobs_handler
from stacks.config.environments import LOCAL_ACCOUNT, LOCAL_PRODUCER
from tests.support.aws import REGION, AwsCalls, handler_clients, http_api_event

NOW = 1_800_000_000.0


class Clock:
    def __init__(self, now: float = NOW) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


PRODUCER = f"arn:aws:sts::{LOCAL_ACCOUNT}:assumed-role/{LOCAL_PRODUCER}/backend-7"
"""A session of the local environment's producer role, granted every tenant."""
PARTNER_ACME = f"arn:aws:sts::{LOCAL_ACCOUNT}:assumed-role/partner-acme/sync"
"""A session of the local environment's partner-acme role, granted tenant acme only."""


def submit(body: dict | str, *, key: str | None = None, caller: str | None = PRODUCER) -> dict:
    headers = {"content-type": "application/json"}
    if key is not None:
        headers["Idempotency-Key"] = key
    text = body if isinstance(body, str) else json.dumps(body)
    return http_api_event("POST", "/jobs", body=text, headers=headers, caller=caller)


def status(job_id: str, *, caller: str | None = PRODUCER) -> dict:
    return http_api_event("GET", f"/jobs/{job_id}", path_parameters={"id": job_id}, caller=caller)


def job(**changes) -> dict:
    return {"lane": "bulk", "kind": "import.page", "tenant": "acme", "payload": {"page": 1}, **changes}


def body_of(response: dict) -> dict:
    return json.loads(response["body"])


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def clients(jobs_environ):
    made = handler_clients(jobs_environ)
    _ = (made.dynamodb, made.sqs)
    return made


@pytest.fixture
def aws_calls(clients) -> AwsCalls:
    return AwsCalls().watch(clients.dynamodb, clients.sqs)


@pytest.fixture
def make_api(jobs_environ, clients, clock):
    """A factory: the jobs handler, optionally with some JOBS_SETTINGS changed (the callers in
    their secret, where the stack keeps them)."""

    def make(**changes):
        environ = dict(jobs_environ)
        if "callers" in changes:
            boto3.client("secretsmanager", region_name=REGION).put_secret_value(
                SecretId=environ["JOBS_CALLERS_ARN"], SecretString=json.dumps(changes.pop("callers"))
            )
        if changes:
            environ["JOBS_SETTINGS"] = json.dumps({**json.loads(environ["JOBS_SETTINGS"]), **changes})
        return jobs_handler.create_handler(environ, clients=clients, clock=clock)

    return make


@pytest.fixture
def api(make_api, aws_calls):
    return make_api()


class Inspect:
    def __init__(self, deployed) -> None:
        self._resources = deployed.resources
        self._dynamodb = boto3.client("dynamodb", region_name=REGION)
        self._sqs = boto3.client("sqs", region_name=REGION)

    def job_row(self, job_id: str) -> dict | None:
        return self._dynamodb.get_item(TableName=self._resources.jobs_table, Key={schema.ID: {"S": job_id}}).get("Item")

    def fail(self, job_id: str, last_error: str, error_class: str) -> None:
        """What a consumer writes on a job's row when it dead-letters it."""
        self._dynamodb.update_item(
            TableName=self._resources.jobs_table,
            Key={schema.ID: {"S": job_id}},
            UpdateExpression="SET #status = :failed, #error = :error, #class = :class",
            ExpressionAttributeNames={"#status": "status", "#error": "last_error", "#class": "error_class"},
            ExpressionAttributeValues={
                ":failed": {"S": schema.RowStatus.FAILED},
                ":error": {"S": last_error},
                ":class": {"S": error_class},
            },
        )

    def job_rows(self) -> list[dict]:
        return self._dynamodb.scan(TableName=self._resources.jobs_table)["Items"]

    def queued(self, lane: str, tenant: str) -> int:
        item = self._dynamodb.get_item(
            TableName=self._resources.state_table, Key={schema.PK: {"S": jobs.queued_key(lane, tenant)}}
        ).get("Item")
        return 0 if item is None else int(item[jobs.QUEUED]["N"])

    def release(self, lane: str, tenant: str) -> None:
        """What a consumer does when one of the tenant's jobs becomes terminal."""
        self._dynamodb.update_item(
            TableName=self._resources.state_table,
            Key={schema.PK: {"S": jobs.queued_key(lane, tenant)}},
            UpdateExpression="ADD #q :minus_one",
            ExpressionAttributeNames={"#q": jobs.QUEUED},
            ExpressionAttributeValues={":minus_one": {"N": "-1"}},
        )

    def messages(self, lane: str) -> list[dict]:
        url = self._resources.queue_urls[lane]
        found: list[dict] = []
        while batch := self._sqs.receive_message(
            QueueUrl=url, MaxNumberOfMessages=10, VisibilityTimeout=30, MessageSystemAttributeNames=["All"]
        ).get("Messages", []):
            found.extend(batch)
        for message in found:
            self._sqs.change_message_visibility(
                QueueUrl=url, ReceiptHandle=message["ReceiptHandle"], VisibilityTimeout=0
            )
        return found

    def fill(self, lane: str, count: int) -> None:
        """Put `count` waiting messages on a lane: a backlog."""
        url = self._resources.queue_urls[lane]
        for start in range(0, count, 10):
            entries = [{"Id": str(i), "MessageBody": "{}"} for i in range(start, min(count, start + 10))]
            self._sqs.send_message_batch(QueueUrl=url, Entries=entries)


@pytest.fixture
def inspect(deployed) -> Inspect:
    return Inspect(deployed)
