"""Sweeper fixtures: pending rows written the way the ingress and jobs API write them, a clock
the test moves, the consumers' side of a lane (taking its messages, counting what they finished),
and readers for what the sweeper left behind (queue messages, metrics, logs)."""

from __future__ import annotations

import gzip
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import boto3
import pytest

from pipeline import schema
from pipeline.adapters.state_table import LaneCounts, LaneDrain
from pipeline.domain.envelope import Envelope
from pipeline.domain.jobs import requests as jobs
from pipeline.handlers.sweeper import create_handler
from tests.support.aws import REGION

T0 = 1_800_000_000.0


@dataclass
class Clock:
    now: float = T0

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


@dataclass
class Rows:
    """Writes and reads pending rows in the webhook-log and jobs tables."""

    clock: Clock
    table_names: dict[str, str] = field(default_factory=lambda: {"webhook": "webhook-log", "job": "jobs"})
    _tables: dict[str, Any] = field(default_factory=dict, repr=False)

    def _table(self, source: str) -> Any:
        # Made once per test: making one per call dominates a test that writes a thousand rows.
        if source not in self._tables:
            self._tables[source] = boto3.resource("dynamodb", region_name=REGION).Table(self.table_names[source])
        return self._tables[source]

    def webhook(
        self, row_id: str, *, lane: str = "messages", tenant: str = "waba-1", age: float = 60.0, **extra: Any
    ) -> None:
        self._table("webhook").put_item(Item=self._webhook_item(row_id, lane, tenant, age, **extra))

    def webhooks(self, ages: dict[str, float], *, lane: str = "messages", tenant: str = "waba-1") -> list[Envelope]:
        """Many webhook rows at once, returning the message the ingress sent for each."""
        with self._table("webhook").batch_writer() as batch:
            for row_id, age in ages.items():
                batch.put_item(Item=self._webhook_item(row_id, lane, tenant, age))
        return [
            Envelope(
                id=row_id,
                lane=lane,
                tenant=tenant,
                kind="whatsapp_business_account",
                source="webhook",
                created_at=int(self.clock.now - age),
                ref=row_id,
            )
            for row_id, age in ages.items()
        ]

    def _webhook_item(self, row_id: str, lane: str, tenant: str, age: float, **extra: Any) -> dict[str, Any]:
        since = int(self.clock.now - age)
        item = {
            schema.ID: row_id,
            "lane": lane,
            "tenant": tenant,
            "kind": "whatsapp_business_account",
            "body": gzip.compress(json.dumps({"object": "whatsapp_business_account"}).encode()),
            "body_encoding": "gzip",
            "body_parts": 1,
            "status": schema.RowStatus.QUEUED,
            "received_at": since,
            "replays": 0,
            schema.PENDING_SHARD: schema.pending_shard(row_id),
            schema.PENDING_SINCE: since,
            **extra,
        }
        return {k: v for k, v in item.items() if v is not None}

    def job(self, row_id: str, *, lane: str = "bulk", tenant: str = "acme", age: float = 60.0, **extra: Any) -> None:
        since = int(self.clock.now - age)
        item = {
            schema.ID: row_id,
            "lane": lane,
            "tenant": tenant,
            "kind": "import.page",
            "payload": {"page": 3, "source": "drive"},
            "attempts": 1,
            "status": schema.RowStatus.QUEUED,
            "created_at": since,
            "replays": 0,
            schema.PENDING_SHARD: schema.pending_shard(row_id),
            schema.PENDING_SINCE: since,
            **extra,
        }
        self._table("job").put_item(Item={k: v for k, v in item.items() if v is not None})

    def get(self, source: str, row_id: str) -> dict[str, Any]:
        return self._table(source).get_item(Key={schema.ID: row_id}, ConsistentRead=True)["Item"]

    def set_queued(self, lane: str, tenant: str, count: int) -> None:
        """A tenant's count of queued jobs on a lane, as the jobs API keeps it."""
        self._state().put_item(Item={schema.PK: jobs.queued_key(lane, tenant), jobs.QUEUED: count})

    def queued(self, lane: str, tenant: str) -> int:
        item = self._state().get_item(Key={schema.PK: jobs.queued_key(lane, tenant)}, ConsistentRead=True)["Item"]
        return int(item[jobs.QUEUED])

    def _state(self) -> Any:
        return boto3.resource("dynamodb", region_name=REGION).Table("state")

    def finish_many(self, source: str, row_ids: list[str]) -> None:
        """`finish` for many rows at once, the effect of many consumers (batched to stay quick)."""
        table = self._table(source)
        resource = boto3.resource("dynamodb", region_name=REGION)
        with table.batch_writer() as batch:
            for start in range(0, len(row_ids), 100):
                keys = [{schema.ID: row_id} for row_id in row_ids[start : start + 100]]
                found = resource.batch_get_item(RequestItems={table.name: {"Keys": keys, "ConsistentRead": True}})
                for item in found["Responses"][table.name]:
                    item.pop(schema.PENDING_SHARD, None)
                    batch.put_item(Item={**item, "status": schema.RowStatus.DONE})

    def finish(self, source: str, row_id: str) -> None:
        """What a consumer does when the work is done: the row leaves the pending index."""
        self._table(source).update_item(
            Key={schema.ID: row_id},
            UpdateExpression="SET #status = :done REMOVE #shard",
            ExpressionAttributeNames={"#status": "status", "#shard": schema.PENDING_SHARD},
            ExpressionAttributeValues={":done": schema.RowStatus.DONE},
        )


@dataclass
class Queues:
    urls: dict[str, str]

    def depth(self, lane: str) -> int:
        attributes = boto3.client("sqs", region_name=REGION).get_queue_attributes(
            QueueUrl=self.urls[lane],
            AttributeNames=["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"],
        )["Attributes"]
        return int(attributes["ApproximateNumberOfMessages"]) + int(attributes["ApproximateNumberOfMessagesNotVisible"])

    def drain(self, lane: str) -> list[Envelope]:
        """Receive and delete everything on the lane: a consumer that took the message and then
        died before finishing its row."""
        sqs = boto3.client("sqs", region_name=REGION)
        envelopes = []
        while True:
            messages = sqs.receive_message(QueueUrl=self.urls[lane], MaxNumberOfMessages=10).get("Messages", [])
            if not messages:
                return envelopes
            for message in messages:
                envelopes.append(Envelope.from_json(message["Body"]))
                sqs.delete_message(QueueUrl=self.urls[lane], ReceiptHandle=message["ReceiptHandle"])

    def send(self, envelopes: list[Envelope]) -> None:
        """Put messages on their lanes as the ingress does (batched only to keep the test quick)."""
        sqs = boto3.client("sqs", region_name=REGION)
        for start in range(0, len(envelopes), 10):
            chunk = envelopes[start : start + 10]
            entries = [{"Id": str(n), "MessageBody": e.to_json()} for n, e in enumerate(chunk)]
            response = sqs.send_message_batch(QueueUrl=self.urls[chunk[0].lane], Entries=entries)
            assert not response.get("Failed"), response["Failed"]

    def take(self, lane: str, count: int) -> list[Envelope]:
        """Receive and delete up to `count` messages, as consumers that finished them do."""
        sqs = boto3.client("sqs", region_name=REGION)
        taken: list[Envelope] = []
        while len(taken) < count:
            wanted = min(10, count - len(taken))
            messages = sqs.receive_message(QueueUrl=self.urls[lane], MaxNumberOfMessages=wanted).get("Messages", [])
            if not messages:
                break
            sqs.delete_message_batch(
                QueueUrl=self.urls[lane],
                Entries=[{"Id": str(n), "ReceiptHandle": m["ReceiptHandle"]} for n, m in enumerate(messages)],
            )
            taken.extend(Envelope.from_json(m["Body"]) for m in messages)
        return taken

    def put_backlog(self, lane: str, count: int = 1) -> None:
        sqs = boto3.client("sqs", region_name=REGION)
        for n in range(count):
            sqs.send_message(QueueUrl=self.urls[lane], MessageBody=json.dumps({"other": n}), MessageGroupId="t")


def metric(out: str, name: str, source: str, lane: str | None = None) -> list[float]:
    """Values of one metric for one Source (and one Lane, or none) in the embedded-metric
    documents on captured stdout."""
    values: list[float] = []
    for line in out.splitlines():
        if not line.startswith('{"_aws"'):
            continue
        document = json.loads(line)
        if document.get("Source") == source and document.get("Lane") == lane and name in document:
            values.extend(document[name])
    return values


@dataclass
class Drains:
    """The count consumers keep of the messages they finish on each lane (the admission drain
    buckets), written through the consumers' own adapter."""

    def record(self, lane: str, count: int, at: float) -> None:
        LaneDrain(LaneCounts(boto3.client("dynamodb", region_name=REGION), "state"), lane).record(count, at)


@pytest.fixture
def drains(deployed) -> Drains:
    return Drains()


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def rows(deployed, clock) -> Rows:
    return Rows(clock)


@pytest.fixture
def queues(deployed) -> Queues:
    return Queues(dict(deployed.resources.queue_urls))


@pytest.fixture
def sweep(sweeper_environ, clock) -> Callable[[], dict[str, Any]]:
    """Runs one sweep at the clock's time, through the handler the schedule invokes."""
    handler = create_handler(sweeper_environ, clock=clock)
    return lambda: handler({"source": "aws.events"}, None)
