"""DynamoDB throttling part of a batch request, against moto: keys or items handed back as
unprocessed through every round an adapter gives them are AWS's state, as a refused call is, so
the record is deferred and spends no attempt (domain/consumer/settling.py), where it used to spend
one on every record of the batch and dead-letter them after a minute of it.

The throttling is injected on the client's own session: moto answers each call, and an
`after-call` hook hands back everything that was asked as unprocessed, as DynamoDB does for a
request whose partitions are throttled."""

from __future__ import annotations

import time
from typing import Any

import boto3
import pytest

from pipeline import schema, settings
from pipeline.adapters.clients import Clients
from pipeline.adapters.erasure import DynamoEraser
from pipeline.adapters.tables import ObligationReader, TableNames
from pipeline.adapters.transactions import Committer
from pipeline.domain.consumer.settling import AWS_SIDE, AWS_UNAVAILABLE
from pipeline.domain.effects import Table
from pipeline.domain.envelope import Envelope
from pipeline.domain.errors import AWS_THROTTLED, classify
from pipeline.domain.webhook.body import part_id
from tests.support.aws import REGION
from tests.unit.consumer.fakes import Recorder
from tests.unit.consumer.handler_output import log_lines

UNPROCESSED = {"BatchGetItem": "UnprocessedKeys", "BatchWriteItem": "UnprocessedItems"}


class PartlyThrottled:
    """Every `operation` call answered with all it asked for left unprocessed."""

    def __init__(self, operation: str) -> None:
        self.operation = operation
        self.calls = 0
        self._asked: dict[str, Any] = {}

    def hook(self, session: Any) -> Any:
        session.events.register(f"provide-client-params.dynamodb.{self.operation}", self._remember)
        session.events.register(f"after-call.dynamodb.{self.operation}", self._unprocessed)
        return session

    def _remember(self, params: dict[str, Any], **_: Any) -> None:
        self._asked = params["RequestItems"]

    def _unprocessed(self, parsed: dict[str, Any], **_: Any) -> None:
        self.calls += 1
        parsed.pop("Responses", None)
        parsed[UNPROCESSED[self.operation]] = self._asked


def _client(throttled: PartlyThrottled) -> Any:
    return throttled.hook(boto3.session.Session(region_name=REGION)).client("dynamodb")


def test_a_batch_whose_obligation_lookup_stays_throttled_is_deferred_without_spending_attempts(lane, caplog):
    # Given a job on the lane, and DynamoDB leaving every key of the consumer's lookup unprocessed
    h = lane("messages")
    h.send(h.job_row("job-1", {}, tenant="acme", kind="test"))
    throttled = PartlyThrottled("BatchGetItem")
    session = throttled.hook(boto3.session.Session(region_name=REGION))
    session.events.register("provide-client-params.*.*", h.calls.record)
    clients = Clients(region=REGION, credentials=settings.credentials(h.environ), _session=session)
    task = Recorder()
    # When the batch is handled
    response, _ = h.poll(h.handler(tasks={"messages": task}, clients=clients))
    # Then the lookup was asked again before giving up, the task never ran, and the record was
    # deferred as AWS's trouble: acked, re-sent, and carrying no spent attempt
    assert throttled.calls > 1
    assert task.calls == []
    assert response == {"batchItemFailures": []}
    [line] = [line for line in log_lines(caplog) if line["message"].startswith("record ")]
    assert (line["outcome"], line["reason"], line["detail"]) == ("deferred", AWS_THROTTLED, {"budget": AWS_UNAVAILABLE})
    copies: list[dict[str, Any]] = []
    waited_until = time.monotonic() + 10
    while not copies and time.monotonic() < waited_until:  # the deferral's delay
        copies = h.receive(visibility=0)
        time.sleep(0.2)
    [copy] = copies
    resent = Envelope.from_json(copy["Body"])
    assert (resent.id, resent.attempt, resent.deferrals) == ("job-1", 0, 1)


def test_a_body_whose_parts_stay_throttled_is_refused_as_aws_trouble(aws, deployed):
    # Given a delivery logged in two parts, whose message travels by reference to its row
    row = {schema.ID: "wh-1", "body": b'{"entry": ', "body_parts": 2, "body_encoding": "identity"}
    table = boto3.resource("dynamodb", region_name=REGION).Table("webhook-log")
    table.put_item(Item=row)
    table.put_item(Item={schema.ID: part_id("wh-1", 1), "body": b"[]}", "part_of": "wh-1"})
    envelope = Envelope(
        id="wh-1",
        lane="messages",
        tenant="acme",
        kind="whatsapp.messages",
        source="webhook",
        created_at=1.0,
        ref="wh-1",
    )
    names = TableNames({Table.WEBHOOK_LOG: "webhook-log"})
    assert ObligationReader(boto3.client("dynamodb", region_name=REGION), names).payload(envelope, row) == {"entry": []}
    # When the consumer reads its body while DynamoDB leaves the part's key unprocessed
    throttled = PartlyThrottled("BatchGetItem")
    with pytest.raises(Exception, match="unprocessed") as raised:
        ObligationReader(_client(throttled), names).payload(envelope, row)
    # Then it says AWS throttled it, which the consumer defers, not a failure that costs attempts
    assert throttled.calls > 1
    assert classify(raised.value).reason in AWS_SIDE


def test_erasure_deletes_that_stay_throttled_are_refused_as_aws_trouble(aws, deployed):
    # Given an item to erase, and DynamoDB leaving every delete of the batch unprocessed
    throttled = PartlyThrottled("BatchWriteItem")
    dynamodb = _client(throttled)
    names = TableNames({Table.DATA: "data", Table.STATE: "state"})
    eraser = DynamoEraser(
        dynamodb,
        names,
        Committer(dynamodb, names),
        kept=None,
        clock=time.time,
        sleep=lambda _: None,  # type: ignore[arg-type]
    )
    # When the erasure deletes it
    with pytest.raises(Exception, match="unprocessed") as raised:
        eraser.delete(Table.DATA, [{schema.PK: "person#1", schema.SK: "in#m1"}])
    # Then it says AWS throttled it: the erasure is deferred, not walked towards the DLQ
    assert throttled.calls > 1
    assert classify(raised.value).reason in AWS_SIDE
