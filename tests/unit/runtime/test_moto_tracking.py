"""moto's instance tracking in the emulator (local_aws/moto_tracking.py): an item deleted from a
table and a message deleted from a queue are freed, while other models are still tracked."""

from __future__ import annotations

import gc

import boto3
from moto.dynamodb.models.dynamo_type import Item
from moto.sqs.models import Message, Queue

from local_aws import moto_patches
from tests.support.aws import REGION


def _live(kind: type) -> list[object]:
    gc.collect()
    return [o for o in gc.get_objects() if type(o) is kind]


def test_a_deleted_item_and_a_deleted_message_are_freed(aws):
    # Given the emulator's patches, a table and a queue
    moto_patches.install()
    dynamodb = boto3.client("dynamodb", region_name=REGION)
    dynamodb.create_table(
        TableName="t",
        BillingMode="PAY_PER_REQUEST",
        AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
    )
    sqs = boto3.client("sqs", region_name=REGION)
    url = sqs.create_queue(QueueName="q")["QueueUrl"]
    items_before, messages_before = len(_live(Item)), len(_live(Message))
    # When items and messages are written, then deleted
    for n in range(50):
        dynamodb.put_item(TableName="t", Item={"pk": {"S": f"k{n}"}, "body": {"S": "x" * 100}})
        sqs.send_message(QueueUrl=url, MessageBody=f"m{n}")
    for n in range(50):
        dynamodb.delete_item(TableName="t", Key={"pk": {"S": f"k{n}"}})
    while received := sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10).get("Messages"):
        sqs.delete_message_batch(
            QueueUrl=url, Entries=[{"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(received)]
        )
    # Then nothing keeps them: no more items or messages live than before
    assert len(_live(Item)) <= items_before
    assert len(_live(Message)) <= messages_before
    assert Item.instances_tracked == []  # type: ignore[attr-defined]
    assert Message.instances_tracked == []  # type: ignore[attr-defined]


def test_other_models_are_still_tracked(aws):
    # Given the emulator's patches
    moto_patches.install()
    # When a queue is made
    boto3.client("sqs", region_name=REGION).create_queue(QueueName="tracked")
    # Then moto still tracks it (its dashboard lists queues)
    assert any(getattr(q, "name", None) == "tracked" for q in Queue.instances_tracked)  # type: ignore[attr-defined]
