"""The emulated SQS measures a message as SQS does, its body and attributes in UTF-8 bytes, and
refuses what SQS refuses (local_aws/moto_limits.py): a message over its queue's
MaximumMessageSize, a batch over 1 MiB in all, and in a batch only the entry over the maximum."""

from __future__ import annotations

import boto3
import pytest
from botocore.exceptions import ClientError

from tests.support.aws import REGION

ATTRIBUTE = {"k": {"DataType": "String", "StringValue": "x"}}
ATTRIBUTE_BYTES = len("k") + len("String") + len("x")
MIB = 1_048_576


@pytest.fixture
def sqs(aws):
    return boto3.client("sqs", region_name=REGION)


def _queue(sqs, name: str, **attributes: str) -> str:
    return sqs.create_queue(QueueName=name, Attributes=attributes)["QueueUrl"]


def _bodies(sqs, url: str) -> list[str]:
    messages = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10).get("Messages", [])
    return [m["Body"] for m in messages]


def test_a_message_whose_body_and_attributes_exceed_the_queue_s_maximum_is_refused_and_not_sent(sqs):
    # Given a queue taking messages of 1,024 bytes
    url = _queue(sqs, "small", MaximumMessageSize="1024")
    # When a message of 1,017 bytes of body and 8 of attribute is sent
    with pytest.raises(ClientError) as refused:
        sqs.send_message(QueueUrl=url, MessageBody="a" * (1025 - ATTRIBUTE_BYTES), MessageAttributes=ATTRIBUTE)
    # Then SQS's refusal names the queue's maximum, and the queue is empty
    error = refused.value.response["Error"]
    assert error["Code"] == "InvalidParameterValue"
    assert error["Message"] == "One or more parameters are invalid. Reason: Message must be shorter than 1024 bytes."
    assert _bodies(sqs, url) == []


def test_a_message_of_exactly_the_maximum_attributes_included_is_sent(sqs):
    url = _queue(sqs, "small", MaximumMessageSize="1024")
    sqs.send_message(QueueUrl=url, MessageBody="a" * (1024 - ATTRIBUTE_BYTES), MessageAttributes=ATTRIBUTE)
    assert _bodies(sqs, url) == ["a" * (1024 - ATTRIBUTE_BYTES)]


def test_a_body_is_measured_in_utf8_bytes_not_characters(sqs):
    # Given a 1,024-byte queue, when a body of 513 two-byte characters (1,026 bytes) is sent
    url = _queue(sqs, "small", MaximumMessageSize="1024")
    with pytest.raises(ClientError) as refused:
        sqs.send_message(QueueUrl=url, MessageBody="é" * 513)
    # Then it is refused as over the maximum, and nothing is queued
    assert refused.value.response["Error"]["Code"] == "InvalidParameterValue"
    assert _bodies(sqs, url) == []


def test_a_batch_whose_messages_with_their_attributes_exceed_1_mib_is_refused_whole(sqs):
    # Given a queue at the default maximum (1 MiB), and a batch of one message of exactly 1 MiB
    # with its attribute and one of a byte
    url = _queue(sqs, "lane")
    entries = [
        {"Id": "big", "MessageBody": "a" * (MIB - ATTRIBUTE_BYTES), "MessageAttributes": ATTRIBUTE},
        {"Id": "small", "MessageBody": "b"},
    ]
    # When the batch is sent
    with pytest.raises(ClientError) as refused:
        sqs.send_message_batch(QueueUrl=url, Entries=entries)
    # Then SQS refuses the whole request, counting what was sent, and neither message is queued
    error = refused.value.response["Error"]
    assert error["Code"] == "AWS.SimpleQueueService.BatchRequestTooLong"
    assert error["Message"] == "Batch requests cannot be longer than 1048576 bytes. You have sent 1048577 bytes."
    assert _bodies(sqs, url) == []


def test_a_batch_entry_over_the_queue_s_maximum_fails_alone_and_the_rest_are_sent(sqs):
    # Given a 1,024-byte queue, and a batch of a message at the maximum and one a byte over it
    url = _queue(sqs, "small", MaximumMessageSize="1024")
    entries = [{"Id": "fits", "MessageBody": "a" * 1024}, {"Id": "over", "MessageBody": "b" * 1025}]
    # When the batch is sent
    response = sqs.send_message_batch(QueueUrl=url, Entries=entries)
    # Then the entry over the maximum fails with SQS's reason and only the other is queued
    assert [entry["Id"] for entry in response["Successful"]] == ["fits"]
    assert response["Failed"] == [
        {
            "Id": "over",
            "SenderFault": True,
            "Code": "InvalidParameterValue",
            "Message": "One or more parameters cannot be validated. Reason: Message must be shorter than 1024 bytes.",
        }
    ]
    assert _bodies(sqs, url) == ["a" * 1024]
