"""Fixtures for the webhook door: a handler over moto with a controllable clock, the AWS calls it
makes, and ways to look at what it left behind (log rows, lane messages, metrics, log records)."""

from __future__ import annotations

import base64
import json
import logging

import boto3
import pytest

from pipeline import schema
from pipeline.adapters.clients import Clients
from pipeline.adapters.webhook_log import WebhookLog
from pipeline.domain.signature import sign
from pipeline.handlers import ingress
from tests.support.aws import META_APP_SECRET, REGION, AwsCalls, handler_clients, http_api_event

NOW = 1_800_000_000.0
PATH = "/webhooks/meta"


class Clock:
    def __init__(self, now: float = NOW) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


def whatsapp_message(text: str = "hello", waba: str = "102030405060") -> dict:
    return {
        "object": "whatsapp_business_account",
        "entry": [
            {
                "id": waba,
                "changes": [
                    {
                        "field": "messages",
                        "value": {
                            "messaging_product": "whatsapp",
                            "metadata": {"display_phone_number": "15550001111", "phone_number_id": "1234"},
                            "messages": [
                                {"from": "15551234567", "id": "wamid.A1", "type": "text", "text": {"body": text}}
                            ],
                        },
                    }
                ],
            }
        ],
    }


def page_comment(page: str = "998877") -> dict:
    return {
        "object": "page",
        "entry": [
            {"id": page, "time": 1, "changes": [{"field": "feed", "value": {"item": "comment", "message": "nice"}}]}
        ],
    }


def post(raw: bytes, *, signature: str | None = "sign", secret: str = META_APP_SECRET, as_base64: bool = False) -> dict:
    """A Meta delivery of exactly `raw`. `signature="sign"` signs it with `secret`; None omits
    the header; any other string is sent as the header value."""
    headers = {"content-type": "application/json"}
    if signature == "sign":
        headers["X-Hub-Signature-256"] = sign(secret, raw)
    elif signature is not None:
        headers["X-Hub-Signature-256"] = signature
    body = base64.b64encode(raw).decode() if as_base64 else raw.decode("utf-8", "surrogateescape")
    return http_api_event("POST", PATH, body=body, headers=headers, is_base64=as_base64)


def encode(payload: dict) -> bytes:
    return json.dumps(payload, ensure_ascii=False).encode()


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def clients(ingress_environ) -> Clients:
    """The handler's own clients, made inside the moto mock (a client made before it escapes),
    signing as the door's role."""
    made = handler_clients(ingress_environ)
    _ = (made.dynamodb, made.sqs, made.secretsmanager)
    return made


@pytest.fixture
def aws_calls(clients) -> AwsCalls:
    return AwsCalls().watch(clients.dynamodb, clients.sqs, clients.secretsmanager)


@pytest.fixture
def door(ingress_environ, clients, aws_calls, clock):
    return ingress.create_handler(ingress_environ, clients=clients, clock=clock)


class Inspect:
    """What the door left in moto, read through clients the door does not use."""

    def __init__(self, deployed) -> None:
        self._resources = deployed.resources
        self._dynamodb = boto3.client("dynamodb", region_name=REGION)
        self._sqs = boto3.client("sqs", region_name=REGION)

    def row(self, row_id: str) -> dict | None:
        return self._dynamodb.get_item(TableName=self._resources.webhook_table, Key={schema.ID: {"S": row_id}}).get(
            "Item"
        )

    def body(self, row_id: str) -> bytes:
        """A logged body, read back the way consumers are meant to read it."""
        return WebhookLog(self._dynamodb, self._resources.webhook_table).load_body(row_id)

    def rows(self) -> list[dict]:
        return self._dynamodb.scan(TableName=self._resources.webhook_table)["Items"]

    def put_row(self, item: dict) -> None:
        """A row as an earlier door wrote it."""
        self._dynamodb.put_item(TableName=self._resources.webhook_table, Item=item)

    def messages(self, lane: str) -> list[dict]:
        """Every message on the lane's queue (received, then made visible again)."""
        url = self._resources.queue_urls[lane]
        found: list[dict] = []
        while True:
            batch = self._sqs.receive_message(
                QueueUrl=url, MaxNumberOfMessages=10, VisibilityTimeout=30, MessageSystemAttributeNames=["All"]
            ).get("Messages", [])
            if not batch:
                break
            found.extend(batch)
        for message in found:
            self._sqs.change_message_visibility(
                QueueUrl=url, ReceiptHandle=message["ReceiptHandle"], VisibilityTimeout=0
            )
        return found

    def mark_done(self, row_id: str) -> None:
        """What a consumer does when it finishes a row."""
        self._dynamodb.update_item(
            TableName=self._resources.webhook_table,
            Key={schema.ID: {"S": row_id}},
            UpdateExpression="SET #s = :done REMOVE #shard",
            ExpressionAttributeNames={"#s": "status", "#shard": schema.PENDING_SHARD},
            ExpressionAttributeValues={":done": {"S": schema.RowStatus.DONE}},
        )


@pytest.fixture
def inspect(deployed) -> Inspect:
    return Inspect(deployed)


@pytest.fixture
def log_records():
    """Log records of the ingress logger (Powertools loggers do not propagate to pytest's caplog)."""
    records: list[logging.LogRecord] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            records.append(record)

    keep = Keep()
    logger = logging.getLogger(ingress.SERVICE)
    logger.addHandler(keep)
    yield records
    logger.removeHandler(keep)
