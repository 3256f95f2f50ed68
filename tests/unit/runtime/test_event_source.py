"""The one emulation of Lambda's SQS event source mapping (local_aws/event_source.py), driven
against moto through the real SQS API: the event built from received messages, and what a batch
leaves on the queue for each kind of response."""

from __future__ import annotations

import hashlib

import boto3
import pytest

from local_aws import event_source
from tests.support.aws import REGION

ARN = f"arn:aws:sqs:{REGION}:123456789012:lane"


@pytest.fixture
def sqs(aws):
    return boto3.client("sqs", region_name=REGION)


@pytest.fixture
def url(sqs):
    return sqs.create_queue(QueueName="lane")["QueueUrl"]


def _send(sqs, url: str, n: int) -> list[str]:
    return [sqs.send_message(QueueUrl=url, MessageBody=f"m{i}")["MessageId"] for i in range(n)]


def _poll(sqs, url: str, invoke, **options) -> event_source.Settled:
    """One batch received with no visibility timeout, so what it leaves is visible at once."""
    return event_source.poll_once(sqs, url, ARN, 10, invoke, visibility=0, **options)


def _left(sqs, url: str) -> set[str]:
    """Every message id visible on the queue."""
    found: set[str] = set()
    while batch := sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10, VisibilityTimeout=30).get("Messages"):
        found.update(m["MessageId"] for m in batch)
    return found


def _answering(response):
    seen: list[dict] = []

    def invoke(event):
        seen.append(event)
        return event_source.Invoked(response(event) if callable(response) else response)

    return invoke, seen


def test_the_event_has_lambdas_record_shape_for_received_messages(sqs, url):
    # Given a message with a message attribute, received the way the mapping receives it
    sent = sqs.send_message(
        QueueUrl=url,
        MessageBody='{"id": "a"}',
        MessageAttributes={"reason": {"DataType": "String", "StringValue": "late"}},
    )["MessageId"]
    messages = event_source.receive(sqs, url, 10)
    # When the event is built
    event = event_source.sqs_event(messages, ARN)
    # Then it has one record per message, in the shape Lambda hands an SQS-triggered function
    (record,) = event["Records"]
    assert set(record) == {
        "messageId",
        "receiptHandle",
        "body",
        "attributes",
        "messageAttributes",
        "md5OfBody",
        "eventSource",
        "eventSourceARN",
        "awsRegion",
    }
    assert record["messageId"] == sent
    assert record["receiptHandle"] == messages[0]["ReceiptHandle"]
    assert record["body"] == '{"id": "a"}'
    assert record["md5OfBody"] == hashlib.md5(b'{"id": "a"}').hexdigest()
    assert record["attributes"]["ApproximateReceiveCount"] == "1"
    assert record["messageAttributes"]["reason"]["stringValue"] == "late"
    assert record["messageAttributes"]["reason"]["dataType"] == "String"
    assert (record["eventSource"], record["eventSourceARN"], record["awsRegion"]) == ("aws:sqs", ARN, REGION)


def test_reported_failures_stay_and_the_rest_of_the_batch_is_deleted(sqs, url):
    # Given three messages, of which the function reports the second as failed
    ids = _send(sqs, url, 3)
    invoke, seen = _answering({"batchItemFailures": [{"itemIdentifier": ids[1]}]})
    # When one batch is polled
    settled = _poll(sqs, url, invoke)
    # Then the function saw all three, and only the reported one is left on the queue
    assert [r["messageId"] for r in seen[0]["Records"]] == ids
    assert settled.failed == {ids[1]}
    assert set(settled.deleted) == {ids[0], ids[2]}
    assert _left(sqs, url) == {ids[1]}


@pytest.mark.parametrize(
    "response",
    [
        pytest.param("ok", id="not a dict"),
        pytest.param({"batchItemFailures": "all"}, id="failures not a list"),
        pytest.param({"batchItemFailures": [{"itemIdentifier": "never-received"}]}, id="unknown identifier"),
        pytest.param({"batchItemFailures": [{}]}, id="missing identifier"),
        pytest.param({"batchItemFailures": [{"itemIdentifier": ""}]}, id="empty identifier"),
    ],
)
def test_a_malformed_response_fails_the_whole_batch_and_deletes_nothing(sqs, url, response):
    # Given two messages and a function answering with a response Lambda cannot read
    ids = _send(sqs, url, 2)
    invoke, _ = _answering(response)
    # When one batch is polled
    settled = _poll(sqs, url, invoke)
    # Then the batch counts as failed and both messages stay
    assert settled.failed is None
    assert settled.malformed
    assert settled.deleted == ()
    assert _left(sqs, url) == set(ids)


def test_one_malformed_item_among_good_ones_still_deletes_nothing(sqs, url):
    ids = _send(sqs, url, 3)
    invoke, _ = _answering({"batchItemFailures": [{"itemIdentifier": ids[0]}, {"id": ids[1]}]})
    settled = _poll(sqs, url, invoke)
    assert settled.failed is None
    assert _left(sqs, url) == set(ids)


@pytest.mark.parametrize(
    "response",
    [
        pytest.param(None, id="None"),
        pytest.param({}, id="empty dict"),
        pytest.param({"batchItemFailures": []}, id="no failures"),
        pytest.param({"batchItemFailures": None}, id="failures None"),
    ],
)
def test_a_response_reporting_no_failures_deletes_the_whole_batch(sqs, url, response):
    ids = _send(sqs, url, 3)
    invoke, _ = _answering(response)
    settled = _poll(sqs, url, invoke)
    assert settled.failed == frozenset()
    assert set(settled.deleted) == set(ids)
    assert _left(sqs, url) == set()


def test_a_failed_invocation_deletes_nothing_even_with_a_valid_response(sqs, url):
    # Given a function that answered, but too late: Lambda never sees the response
    ids = _send(sqs, url, 2)
    settled = _poll(sqs, url, lambda event: event_source.Invoked({}, ok=False))
    # Then nothing is deleted, and it is not a malformed response either
    assert settled.failed is None
    assert not settled.malformed
    assert _left(sqs, url) == set(ids)


def test_without_report_batch_item_failures_a_successful_invocation_deletes_everything(sqs, url):
    ids = _send(sqs, url, 2)
    invoke, _ = _answering({"batchItemFailures": [{"itemIdentifier": ids[0]}]})
    _poll(sqs, url, invoke, report_failures=False)
    assert _left(sqs, url) == set()


def test_an_empty_queue_invokes_nothing(sqs, url):
    invoke, seen = _answering(None)
    settled = _poll(sqs, url, invoke)
    assert seen == []
    assert not settled.invoked
    assert settled.messages == []


def test_a_batch_larger_than_one_delete_request_is_deleted_in_chunks(sqs, url):
    # Given twelve received messages (the runtime's poller gathers batches above ten)
    ids = _send(sqs, url, 12)
    messages = event_source.receive(sqs, url, 10) + event_source.receive(sqs, url, 10)
    invoke, _ = _answering(None)
    # When they are delivered as one batch
    settled = event_source.deliver(sqs, url, ARN, messages, invoke)
    # Then all are deleted, in two DeleteMessageBatch requests
    assert settled.delete_requests == 2
    assert set(settled.deleted) == set(ids)
    assert _left(sqs, url) == set()
