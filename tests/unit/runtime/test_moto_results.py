"""The emulator's direct JSON answers (local_aws/moto_results.py): for every operation that
takes that path, a boto3 client reads exactly what moto's own serializer would have given it,
binary values, empty answers and refusals included."""

from __future__ import annotations

import boto3
import pytest
from botocore.exceptions import ClientError
from moto.backends import get_backend
from moto.core.responses import ActionResult

from local_aws import moto_patches, moto_results
from tests.support.aws import REGION

ITEM = {
    "pk": {"S": "a"},
    "body": {"B": b"\x00\x01\xffzz"},
    "n": {"N": "1.50"},
    "l": {"L": [{"S": "x"}, {"N": "2"}, {"NULL": True}, {"BOOL": False}]},
    "m": {"M": {"k": {"SS": ["p", "q"]}}},
    "bs": {"BS": [b"\x02", b"\x03"]},
    "ns": {"NS": ["1", "2"]},
}


def _dynamodb_calls(c) -> dict:
    c.create_table(
        TableName="t",
        BillingMode="PAY_PER_REQUEST",
        AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
    )
    seen = {
        "PutItem new": c.put_item(TableName="t", Item=ITEM, ReturnValues="ALL_OLD"),
        "PutItem old": c.put_item(TableName="t", Item=ITEM, ReturnValues="ALL_OLD", ReturnConsumedCapacity="TOTAL"),
        "GetItem": c.get_item(TableName="t", Key={"pk": {"S": "a"}}, ConsistentRead=True),
        "GetItem missing": c.get_item(TableName="t", Key={"pk": {"S": "none"}}),
        "BatchGetItem": c.batch_get_item(
            RequestItems={"t": {"Keys": [{"pk": {"S": "a"}}, {"pk": {"S": "none"}}], "ConsistentRead": True}}
        ),
        "UpdateItem": c.update_item(
            TableName="t",
            Key={"pk": {"S": "a"}},
            UpdateExpression="ADD n :one SET z = :z",
            ExpressionAttributeValues={":one": {"N": "1"}, ":z": {"B": b"\x09"}},
            ReturnValues="ALL_NEW",
        ),
        "UpdateItem no values": c.update_item(
            TableName="t",
            Key={"pk": {"S": "c"}},
            UpdateExpression="ADD n :one",
            ExpressionAttributeValues={":one": {"N": "1"}},
        ),
        "Query": c.query(TableName="t", KeyConditionExpression="pk = :p", ExpressionAttributeValues={":p": {"S": "a"}}),
        "Scan": c.scan(TableName="t"),
        "DeleteItem": c.delete_item(TableName="t", Key={"pk": {"S": "c"}}, ReturnValues="ALL_OLD"),
        "TransactWriteItems": c.transact_write_items(TransactItems=[{"Put": {"TableName": "t", "Item": ITEM}}]),
        "BatchWriteItem": c.batch_write_item(RequestItems={"t": [{"PutRequest": {"Item": {"pk": {"S": "e"}}}}]}),
    }
    with pytest.raises(ClientError) as refused:
        c.put_item(
            TableName="t",
            Item={"pk": {"S": "a"}},
            ConditionExpression="attribute_not_exists(pk)",
            ReturnValuesOnConditionCheckFailure="ALL_OLD",
        )
    seen["PutItem refused"] = refused.value.response
    return seen


def _sqs_calls(c) -> dict:
    url = c.create_queue(QueueName="q")["QueueUrl"]
    attributes = {
        "tenant": {"DataType": "String", "StringValue": "t1"},
        "blob": {"DataType": "Binary", "BinaryValue": b"\x00\x01"},
    }
    seen = {
        "GetQueueUrl": c.get_queue_url(QueueName="q"),
        "SendMessage": c.send_message(QueueUrl=url, MessageBody="one", MessageAttributes=attributes),
        "SendMessageBatch": c.send_message_batch(
            QueueUrl=url, Entries=[{"Id": "1", "MessageBody": "two"}, {"Id": "2", "MessageBody": "three"}]
        ),
    }
    seen["ReceiveMessage"] = received = c.receive_message(
        QueueUrl=url,
        MaxNumberOfMessages=10,
        MessageAttributeNames=["All"],
        MessageSystemAttributeNames=["ApproximateReceiveCount", "SentTimestamp"],
        VisibilityTimeout=30,
    )
    handles = [m["ReceiptHandle"] for m in received["Messages"]]
    seen["ChangeMessageVisibility"] = c.change_message_visibility(
        QueueUrl=url, ReceiptHandle=handles[0], VisibilityTimeout=60
    )
    seen["ChangeMessageVisibilityBatch"] = c.change_message_visibility_batch(
        QueueUrl=url,
        Entries=[{"Id": "a", "ReceiptHandle": handles[1], "VisibilityTimeout": 60}, {"Id": "b", "ReceiptHandle": "x"}],
    )
    seen["DeleteMessage"] = c.delete_message(QueueUrl=url, ReceiptHandle=handles[0])
    seen["DeleteMessageBatch"] = c.delete_message_batch(
        QueueUrl=url, Entries=[{"Id": "a", "ReceiptHandle": handles[1]}, {"Id": "b", "ReceiptHandle": "x"}]
    )
    seen["ReceiveMessage empty"] = c.receive_message(QueueUrl=url, WaitTimeSeconds=0)
    seen["GetQueueAttributes"] = c.get_queue_attributes(QueueUrl=url, AttributeNames=["All"])
    return seen


def _comparable(seen: dict) -> dict:
    """What differs by nature between two runs (ids, handles, clocks) set aside."""
    volatile = {
        "ResponseMetadata",
        "MessageId",
        "ReceiptHandle",
        "SentTimestamp",
        "CreatedTimestamp",
        "LastModifiedTimestamp",
        "ApproximateFirstReceiveTimestamp",
        "SequenceNumber",
    }

    def clean(value):
        if isinstance(value, dict):
            return {k: clean(v) for k, v in value.items() if k not in volatile}
        if isinstance(value, list):
            return [clean(v) for v in value]
        return value

    return clean(seen)


def _both_ways(monkeypatch, calls, service: str) -> tuple[dict, dict]:
    moto_patches.install()
    direct = _comparable(calls(boto3.client(service, region_name=REGION)))
    for backend in get_backend(service).values():
        backend.reset()  # the same names again, from empty
    with monkeypatch.context() as m:
        m.setattr(ActionResult, "execute_result", moto_results.through_serializer())
        serialized = _comparable(calls(boto3.client(service, region_name=REGION)))
    return direct, serialized


@pytest.mark.parametrize(("service", "calls"), [("dynamodb", _dynamodb_calls), ("sqs", _sqs_calls)])
def test_a_client_reads_the_same_answer_as_through_motos_serializer(aws, monkeypatch, service, calls):
    # Given the same calls made with the direct JSON answers and through moto's serializer
    direct, serialized = _both_ways(monkeypatch, calls, service)
    # Then every operation's response is the same, key for key
    assert direct.keys() == serialized.keys()
    for operation in direct:
        assert direct[operation] == serialized[operation], operation
    # And the calls cover every operation that takes the direct path
    covered = {name.split()[0] for name in direct}
    assert covered >= moto_results.OPERATIONS[service]


def test_binary_values_come_back_as_the_bytes_written(aws):
    # Given an item with binary attributes, written and read through the direct path
    moto_patches.install()
    seen = _dynamodb_calls(boto3.client("dynamodb", region_name=REGION))
    # Then the bytes are the ones written, not their base64
    assert seen["GetItem"]["Item"]["body"] == {"B": b"\x00\x01\xffzz"}
    assert sorted(seen["GetItem"]["Item"]["bs"]["BS"]) == [b"\x02", b"\x03"]
