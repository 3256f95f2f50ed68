"""Playing the Lambda service for one lane's consumer against moto.

`LaneHarness.poll` does what the event source mapping does, through the runtime's one emulation of
it (`local_aws/event_source.py`): receive from the lane queue (real visibility and receive
counts), build the SQS event, invoke the handler, and delete the records the response did not
report as failures. Rows are written the way the ingress (its real
WebhookLog adapter) and the jobs API write them. The handler's own clients come from a boto3
session whose event hooks record every call it makes, so tests can inspect what it asked SQS,
and can make its calls slow (moto answers, and the answer arrives late). As Lambda does, the
harness drops the response of an invocation that answers after its deadline: nothing is deleted,
and its messages come back when their visibility runs out.

Beside it: handler_seams.py (those clients, the context, a clock), lane_env.py (a test lane's
settings and messages) and handler_output.py (the log lines and metrics a handler left).
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable, Mapping
from typing import Any

import boto3

from local_aws import event_source
from pipeline import schema, settings
from pipeline.adapters.webhook_log import LogEntry, WebhookLog
from pipeline.domain import retention
from pipeline.domain.envelope import Envelope
from pipeline.domain.jobs import requests as job_rules
from pipeline.domain.webhook import body as webhook_body
from pipeline.domain.webhook.routing import Route
from pipeline.handlers.consumer import create_handler
from tests.support.aws import REGION
from tests.unit.consumer.handler_seams import Calls, Context, hooked_clients


class LaneHarness:
    def __init__(self, lane: str, environ: Mapping[str, str], queue_arn: str) -> None:
        self.lane = lane
        self.environ = dict(environ)
        self.queue_arn = queue_arn
        self.queue_url = environ["QUEUE_URL"]
        self.dlq_url = environ["DLQ_URL"]
        self.sqs = boto3.client("sqs", region_name=REGION)
        self.dynamodb = boto3.resource("dynamodb", region_name=REGION)
        self.calls = Calls()

    # The consumer

    def handler(
        self, environ: Mapping[str, str] | None = None, *, slow: Mapping[str, float] | None = None, **seams: Any
    ) -> Callable[..., dict[str, Any]]:
        seams.setdefault("clients", hooked_clients(self.calls, slow, environ or self.environ))
        return create_handler(environ or self.environ, **seams)

    # SQS, as the event source mapping uses it

    def send(self, envelope: Envelope, *, delay: int = 0) -> str:
        kwargs: dict[str, Any] = {"QueueUrl": self.queue_url, "MessageBody": envelope.to_json()}
        if delay:
            kwargs["DelaySeconds"] = delay
        return self.sqs.send_message(**kwargs)["MessageId"]

    def send_raw(self, body: str) -> str:
        return self.sqs.send_message(QueueUrl=self.queue_url, MessageBody=body)["MessageId"]

    def receive(self, limit: int = 10, visibility: int | None = None, url: str | None = None) -> list[dict[str, Any]]:
        return event_source.receive(self.sqs, url or self.queue_url, limit, visibility=visibility)

    def invoke(
        self, handler: Callable[..., dict[str, Any]], messages: list[dict[str, Any]], context: Any = None
    ) -> dict[str, Any]:
        invoke = _invoker(handler, context if context is not None else Context(60))
        return _response(event_source.deliver(self.sqs, self.queue_url, self.queue_arn, messages, invoke))

    def poll(
        self,
        handler: Callable[..., dict[str, Any]],
        *,
        limit: int = 10,
        visibility: int | None = None,
        context: Any = None,
    ) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        """One batch; an empty receive invokes nothing (as Lambda) and answers no failures."""
        invoke = _invoker(handler, context if context is not None else Context(60))
        settled = event_source.poll_once(self.sqs, self.queue_url, self.queue_arn, limit, invoke, visibility=visibility)
        return _response(settled), settled.messages

    def dead_letters(self) -> list[dict[str, Any]]:
        found: list[dict[str, Any]] = []
        while batch := self.receive(10, visibility=30, url=self.dlq_url):
            found.extend(batch)
        return found

    def depth(self, url: str | None = None) -> int:
        attributes = self.sqs.get_queue_attributes(
            QueueUrl=url or self.queue_url,
            AttributeNames=[
                "ApproximateNumberOfMessages",
                "ApproximateNumberOfMessagesNotVisible",
                "ApproximateNumberOfMessagesDelayed",
            ],
        )["Attributes"]
        return sum(int(v) for v in attributes.values())

    # Rows, as the ingress and the jobs API write them

    def webhook_row(
        self,
        payload: Any,
        *,
        tenant: str,
        lane: str | None = None,
        received_at: float | None = None,
        inline: bool = False,
        deadline: float | None = None,
    ) -> Envelope:
        raw = json.dumps(payload).encode()
        row_id = "wh-" + hashlib.sha256(raw).hexdigest()
        received = received_at if received_at is not None else time.time()
        route = Route(lane=lane or self.lane, tenant=tenant, kind="whatsapp.messages")
        WebhookLog(boto3.client("dynamodb", region_name=REGION), "webhook-log").record(
            LogEntry(
                id=row_id,
                received_at=received,
                body=webhook_body.pack(raw),
                route=route,
                expires_at=retention.expiry(received, settings.retention(self.environ).raw_deliveries_seconds),
            )
        )
        return Envelope(
            id=row_id,
            lane=route.lane,
            tenant=tenant,
            kind=route.kind,
            source="webhook",
            created_at=received,
            deadline=deadline,
            payload=payload if inline else None,
            ref=None if inline else row_id,
        )

    def job_row(
        self,
        job_id: str,
        payload: Any,
        *,
        tenant: str,
        kind: str,
        created_at: float | None = None,
        deadline: float | None = None,
        queued: int | None = None,
        inline: bool = True,
    ) -> Envelope:
        created = created_at if created_at is not None else time.time()
        item = {
            schema.ID: job_id,
            "lane": self.lane,
            "tenant": tenant,
            "kind": kind,
            "payload": payload,
            "status": schema.RowStatus.QUEUED,
            "attempts": 0,
            "deferrals": 0,
            "created_at": _decimal(created),
            "updated_at": _decimal(created),
            schema.PENDING_SHARD: schema.pending_shard(job_id),
            schema.PENDING_SINCE: _decimal(created),
        }
        if deadline is not None:
            item["deadline"] = _decimal(deadline)
        self.dynamodb.Table("jobs").put_item(Item=_decimals(item))
        if queued is not None:
            self.dynamodb.Table("state").put_item(
                Item={schema.PK: job_rules.queued_key(self.lane, tenant), job_rules.QUEUED: queued}
            )
        return Envelope(
            id=job_id,
            lane=self.lane,
            tenant=tenant,
            kind=kind,
            source="job",
            created_at=created,
            deadline=deadline,
            payload=payload if inline else None,
            ref=None if inline else job_id,
        )

    def row(self, table: str, row_id: str) -> dict[str, Any] | None:
        return self.dynamodb.Table(table).get_item(Key={schema.ID: row_id}, ConsistentRead=True).get("Item")

    def state(self, pk: str) -> dict[str, Any] | None:
        return self.dynamodb.Table("state").get_item(Key={schema.PK: pk}, ConsistentRead=True).get("Item")

    def data(self, pk: str, sk: str) -> dict[str, Any] | None:
        return self.dynamodb.Table("data").get_item(Key={schema.PK: pk, schema.SK: sk}, ConsistentRead=True).get("Item")

    def data_items(self, pk: str) -> list[dict[str, Any]]:
        from boto3.dynamodb.conditions import Key

        return self.dynamodb.Table("data").query(KeyConditionExpression=Key(schema.PK).eq(pk))["Items"]


def _invoker(handler: Callable[..., Any], context: Any) -> event_source.Invoke:
    def invoke(event: dict[str, Any]) -> event_source.Invoked:
        response = handler(event, context)
        # Answered after its deadline: Lambda never sees the response (the mapping deletes nothing).
        return event_source.Invoked(response, ok=context.get_remaining_time_in_millis() > 0)

    return invoke


def _response(settled: event_source.Settled) -> dict[str, Any]:
    """What the test reads of the batch: the handler's response, or for a timed-out invocation
    every record failed, marked `timed_out`."""
    if settled.undeleted:
        raise AssertionError(f"SQS refused to delete {list(settled.undeleted)}")
    if settled.outcome is None:
        return {"batchItemFailures": []}
    if not settled.outcome.ok:
        return {
            "batchItemFailures": [{"itemIdentifier": m["MessageId"]} for m in settled.messages],
            "timed_out": True,
        }
    return settled.outcome.result


def _decimal(value: float) -> Any:
    from decimal import Decimal

    return Decimal(str(value))


def _decimals(value: Any) -> Any:
    from decimal import Decimal

    if isinstance(value, float):
        return Decimal(str(value))
    if isinstance(value, dict):
        return {k: _decimals(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_decimals(v) for v in value]
    return value
