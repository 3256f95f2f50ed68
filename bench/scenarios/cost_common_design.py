"""Scenario 10's baseline, run in the same emulator: the common design as an experienced engineer
builds it by default (a door that verifies and sends to SQS, a Powertools idempotent consumer)."""

from __future__ import annotations

import hashlib
import hmac
import json
import time
import uuid
import warnings
from typing import Any

from bench.mapping_player import drain
from bench.scenarios.cost_tally import CONSUMER, DOOR, ESM, Tally
from bench.scenarios.metering import Meter
from ops.drive import Session


def common_design(s: Session, bodies: list[dict[str, Any]], batch: int, *, kept_seconds: int) -> Tally:
    """The usual way, in the same emulator: door = verify + SendMessage; consumer = Powertools
    idempotency around an idempotent put of the message, kept `kept_seconds`; a poller in batches
    of `batch`."""
    import boto3

    from bench.consumer_powertools import create_idempotency_table, make_handler, store_message

    secret = s.client.app_secret.encode()
    table = s.outputs["DataTableName"]
    meter = Meter(lambda: boto3.session.Session(region_name="us-east-1").client("dynamodb"))
    session = boto3.session.Session(region_name="us-east-1")
    door_sqs, esm_sqs = session.client("sqs"), session.client("sqs")
    consumer_dynamodb = session.client("dynamodb")
    admin = boto3.session.Session(region_name="us-east-1")
    queue = admin.client("sqs").create_queue(QueueName=f"common-design-{uuid.uuid4().hex[:6]}")["QueueUrl"]
    create_idempotency_table(admin.client("dynamodb"))
    meter.attach(door_sqs, lambda *_: DOOR)
    meter.attach(esm_sqs, lambda *_: ESM)
    meter.attach(consumer_dynamodb, lambda *_: CONSUMER)

    def door(raw: bytes, signature: str) -> int:
        expected = "sha256=" + hmac.new(secret, raw, hashlib.sha256).hexdigest()
        if not hmac.compare_digest(expected, signature):
            return 403
        payload = json.loads(raw)
        entry = payload["entry"][0]
        message = entry["changes"][0]["value"]["messages"][0]
        body = json.dumps({"id": message["id"], "tenant": entry["id"], "payload": payload})
        door_sqs.send_message(QueueUrl=queue, MessageBody=body)
        return 200

    def store(envelope: dict[str, Any]) -> dict[str, Any]:
        message = envelope["payload"]["entry"][0]["changes"][0]["value"]["messages"][0]
        pk = f"common#msg#{envelope['tenant']}#{message['id']}"
        store_message(consumer_dynamodb, table, pk, message, expires_at=int(time.time()) + kept_seconds)
        return {"stored": 1}

    handler = make_handler(consumer_dynamodb, store)
    for body in bodies:
        raw = json.dumps(body, ensure_ascii=False).encode()
        door(raw, "sha256=" + hmac.new(secret, raw, hashlib.sha256).hexdigest())
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Couldn't determine the remaining time left")
        drained = drain(esm_sqs, queue, "arn:aws:sqs:us-east-1:123456789012:common-design", handler, batch=batch)
    return Tally(
        webhooks=len(bodies),
        api_requests=len(bodies),
        door_invocations=len(bodies),
        consumer_invocations=drained.batches,
        records=drained.records,
        usage=dict(meter.usage),
    )
