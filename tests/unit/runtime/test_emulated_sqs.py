"""The indexed SQS queues (local_aws/moto_sqs.py) keep SQS's semantics through the real API:
visibility, receive counts, redrive, delays, deletes by any handle, purge, and the counts and age
CloudWatch reads. Every test drives boto3 against moto with the patch installed (tests/conftest.py
installs it for the whole session, as the runtime does)."""

from __future__ import annotations

import json
import time

import boto3
import pytest
from botocore.exceptions import ClientError
from moto.sqs.models import sqs_backends

from local_aws.moto_sqs import MessageIndex, counts_of
from tests.support.aws import REGION

ACCOUNT = "123456789012"


@pytest.fixture
def sqs(aws):
    return boto3.client("sqs", region_name=REGION)


def _queue(sqs, name: str, **attributes: str) -> str:
    return sqs.create_queue(QueueName=name, Attributes=attributes)["QueueUrl"]


def _receive(sqs, url: str, n: int = 10, visibility: int = 30) -> list[dict]:
    return sqs.receive_message(
        QueueUrl=url, MaxNumberOfMessages=n, VisibilityTimeout=visibility, MessageSystemAttributeNames=["All"]
    ).get("Messages", [])


def _depth(sqs, url: str) -> tuple[int, int, int]:
    attributes = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["All"])["Attributes"]
    return (
        int(attributes["ApproximateNumberOfMessages"]),
        int(attributes["ApproximateNumberOfMessagesNotVisible"]),
        int(attributes["ApproximateNumberOfMessagesDelayed"]),
    )


def test_the_patch_is_what_backs_a_standard_queue(sqs):
    url = _queue(sqs, "lane")
    sqs.send_message(QueueUrl=url, MessageBody="m")
    queue = sqs_backends[ACCOUNT][REGION].queues["lane"]
    assert isinstance(queue.__dict__.get("_lanes_index"), MessageIndex)


def test_receives_are_oldest_first_and_a_received_message_is_invisible_until_deleted(sqs):
    url = _queue(sqs, "lane")
    for n in range(5):
        sqs.send_message(QueueUrl=url, MessageBody=f"m{n}")
    first = _receive(sqs, url, n=3)
    assert [m["Body"] for m in first] == ["m0", "m1", "m2"]
    assert _depth(sqs, url) == (2, 3, 0)
    rest = _receive(sqs, url)
    assert [m["Body"] for m in rest] == ["m3", "m4"]
    assert _receive(sqs, url) == []
    for message in first + rest:
        sqs.delete_message(QueueUrl=url, ReceiptHandle=message["ReceiptHandle"])
    assert _depth(sqs, url) == (0, 0, 0)


def test_a_message_comes_back_after_its_visibility_timeout_with_its_receive_count_raised(sqs):
    url = _queue(sqs, "lane")
    sqs.send_message(QueueUrl=url, MessageBody="m")
    (first,) = _receive(sqs, url, visibility=1)
    assert first["Attributes"]["ApproximateReceiveCount"] == "1"
    assert _receive(sqs, url) == []
    time.sleep(1.1)
    (again,) = _receive(sqs, url, visibility=1)
    assert again["MessageId"] == first["MessageId"]
    assert again["Attributes"]["ApproximateReceiveCount"] == "2"
    assert again["ReceiptHandle"] != first["ReceiptHandle"]


def test_visibility_zero_returns_a_message_at_once_and_a_longer_one_keeps_it_hidden(sqs):
    url = _queue(sqs, "lane")
    sqs.send_message(QueueUrl=url, MessageBody="a")
    sqs.send_message(QueueUrl=url, MessageBody="b")
    a, b = _receive(sqs, url, n=2, visibility=1)
    sqs.change_message_visibility(QueueUrl=url, ReceiptHandle=a["ReceiptHandle"], VisibilityTimeout=0)
    sqs.change_message_visibility(QueueUrl=url, ReceiptHandle=b["ReceiptHandle"], VisibilityTimeout=60)
    time.sleep(1.1)
    assert [m["Body"] for m in _receive(sqs, url)] == ["a"]


def test_an_unknown_receipt_handle_is_refused_and_a_repeated_delete_succeeds(sqs):
    url = _queue(sqs, "lane")
    sqs.send_message(QueueUrl=url, MessageBody="m")
    (message,) = _receive(sqs, url)
    sqs.delete_message(QueueUrl=url, ReceiptHandle=message["ReceiptHandle"])
    sqs.delete_message(QueueUrl=url, ReceiptHandle=message["ReceiptHandle"])
    with pytest.raises(ClientError) as refused:
        sqs.delete_message(QueueUrl=url, ReceiptHandle="never-issued")
    assert refused.value.response["Error"]["Code"] in ("ReceiptHandleIsInvalid", "InvalidParameterValue")
    with pytest.raises(ClientError):
        sqs.change_message_visibility(QueueUrl=url, ReceiptHandle="never-issued", VisibilityTimeout=0)


def test_an_earlier_receipt_handle_still_deletes_the_message(sqs):
    url = _queue(sqs, "lane")
    sqs.send_message(QueueUrl=url, MessageBody="m")
    (first,) = _receive(sqs, url, visibility=1)
    time.sleep(1.1)
    _receive(sqs, url, visibility=30)
    sqs.delete_message(QueueUrl=url, ReceiptHandle=first["ReceiptHandle"])
    assert _depth(sqs, url) == (0, 0, 0)


def test_delete_batch_reports_each_entry(sqs):
    url = _queue(sqs, "lane")
    sqs.send_message(QueueUrl=url, MessageBody="m")
    (message,) = _receive(sqs, url)
    result = sqs.delete_message_batch(
        QueueUrl=url,
        Entries=[{"Id": "good", "ReceiptHandle": message["ReceiptHandle"]}, {"Id": "bad", "ReceiptHandle": "nope"}],
    )
    assert [e["Id"] for e in result["Successful"]] == ["good"]
    assert [e["Id"] for e in result["Failed"]] == ["bad"]


def test_a_delayed_message_is_counted_as_delayed_then_becomes_receivable(sqs):
    url = _queue(sqs, "lane")
    sqs.send_message(QueueUrl=url, MessageBody="later", DelaySeconds=1)
    sqs.send_message(QueueUrl=url, MessageBody="now")
    assert _depth(sqs, url) == (1, 0, 1)
    assert [m["Body"] for m in _receive(sqs, url)] == ["now"]
    time.sleep(1.1)
    assert [m["Body"] for m in _receive(sqs, url)] == ["later"]


def test_a_delay_past_sqs_limit_is_refused(sqs):
    url = _queue(sqs, "lane")
    with pytest.raises(ClientError):
        sqs.send_message(QueueUrl=url, MessageBody="m", DelaySeconds=901)
    assert _depth(sqs, url) == (0, 0, 0)


def test_a_message_received_max_receives_times_moves_to_the_dead_letter_queue_on_the_next_receive(sqs):
    dlq_url = _queue(sqs, "lane-dlq")
    dlq_arn = sqs.get_queue_attributes(QueueUrl=dlq_url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    url = _queue(sqs, "lane", RedrivePolicy=json.dumps({"deadLetterTargetArn": dlq_arn, "maxReceiveCount": "2"}))
    sqs.send_message(QueueUrl=url, MessageBody="poison")
    for expected in ("1", "2"):
        (message,) = _receive(sqs, url, visibility=0)
        assert message["Attributes"]["ApproximateReceiveCount"] == expected
    assert _receive(sqs, url) == []
    assert _depth(sqs, url) == (0, 0, 0)
    (dead,) = _receive(sqs, dlq_url)
    assert dead["Body"] == "poison"


def test_purge_empties_the_queue(sqs):
    url = _queue(sqs, "lane")
    for n in range(3):
        sqs.send_message(QueueUrl=url, MessageBody=f"m{n}")
    _receive(sqs, url, n=1)
    sqs.purge_queue(QueueUrl=url)
    assert _depth(sqs, url) == (0, 0, 0)
    assert _receive(sqs, url) == []


def test_a_long_poll_returns_as_soon_as_a_message_arrives(sqs):
    import threading

    url = _queue(sqs, "lane")
    threading.Timer(0.3, lambda: sqs.send_message(QueueUrl=url, MessageBody="m")).start()
    got = sqs.receive_message(QueueUrl=url, WaitTimeSeconds=5).get("Messages", [])
    assert [m["Body"] for m in got] == ["m"]


def test_counts_and_oldest_age_follow_the_messages(sqs):
    url = _queue(sqs, "lane")
    queue = sqs_backends[ACCOUNT][REGION].queues["lane"]
    assert counts_of(queue).oldest_sent_ms is None
    sqs.send_message(QueueUrl=url, MessageBody="first")
    sent = counts_of(queue).oldest_sent_ms
    sqs.send_message(QueueUrl=url, MessageBody="second")
    (first,) = _receive(sqs, url, n=1)
    assert counts_of(queue) == type(counts_of(queue))(1, 1, 0, sent)
    sqs.delete_message(QueueUrl=url, ReceiptHandle=first["ReceiptHandle"])
    after = counts_of(queue)
    assert after.visible == 1
    assert after.in_flight == 0
    assert after.oldest_sent_ms is not None
    assert after.oldest_sent_ms >= sent


def test_a_fifo_queue_keeps_motos_own_behaviour(sqs):
    url = _queue(sqs, "lane.fifo", FifoQueue="true", ContentBasedDeduplication="true")
    sqs.send_message(QueueUrl=url, MessageBody="m", MessageGroupId="g")
    sqs.send_message(QueueUrl=url, MessageBody="m", MessageGroupId="g")  # deduplicated
    messages = _receive(sqs, url)
    assert [m["Body"] for m in messages] == ["m"]
    assert "_lanes_index" not in sqs_backends[ACCOUNT][REGION].queues["lane.fifo"].__dict__


class _Message:
    """What the index reads of a moto message."""

    def __init__(self, n: int) -> None:
        self.id = f"id{n}"
        self.sent_timestamp = n
        self.delayed_until = 0
        self.receipt_handle = f"h{n}"
        self.all_receipt_handles = [self.receipt_handle]


def _delete_new(index: MessageIndex, n: int, at_ms: float) -> None:
    """Message n added, received (its handle given out) and deleted at `at_ms`."""
    message = _Message(n)
    index.add(message, now_ms=at_ms)
    index._handles[message.receipt_handle] = message.id
    assert index.delete(message.receipt_handle, now_ms=at_ms)


def test_deleted_handles_are_remembered_up_to_a_bound():
    from local_aws import message_index

    index = MessageIndex()
    bound = message_index.DELETED_HANDLES_KEPT
    message_index.DELETED_HANDLES_KEPT = 3
    try:
        for n in range(5):
            _delete_new(index, n, 20)
        assert len(index._deleted) == 3
        assert index.delete("h4", now_ms=20)
        assert not index.delete("h0", now_ms=20)
    finally:
        message_index.DELETED_HANDLES_KEPT = bound


def test_deleted_handles_are_forgotten_once_an_sdk_retry_is_past():
    # Given a message deleted at t=10 s, whose handle a retried delete may still name
    from local_aws import message_index

    index = MessageIndex()
    _delete_new(index, 0, 10_000)
    window_ms = message_index.DELETED_HANDLES_SECONDS * 1000
    # When the retry comes within the window, it succeeds as SQS's would
    assert index.delete("h0", now_ms=10_000 + window_ms - 1)
    # And once another delete happens past the window, the old handle is no longer held
    _delete_new(index, 1, 10_000 + window_ms + 1)
    assert list(index._deleted) == ["h1"]
    assert not index.delete("h0", now_ms=10_000 + window_ms + 2)
