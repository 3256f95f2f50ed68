"""A queued webhook whose writes are idempotent by key is finished by those writes alone: one
conditional call each, no transaction, no row write. Everything else keeps its done-mark."""

from __future__ import annotations

import json

import boto3

from pipeline import schema
from pipeline.adapters.webhook_log import WebhookLog
from pipeline.domain.consumer.work import TaskResult
from pipeline.domain.effects import Put, Table
from tests.support.aws import REGION
from tests.unit.consumer.handler_output import log_lines
from tests.unit.tasks.payloads import WABA, FakeVendor, message_at, person, status, status_at, text_message, whatsapp


def _outcomes(caplog) -> list[str]:
    return [line["outcome"] for line in log_lines(caplog) if line["message"].startswith("record ")]


def _writes(h) -> list[str]:
    """Every write call but the batch's drain count (one per batch, for admission)."""
    return [
        op
        for op in ("PutItem", "UpdateItem", "TransactWriteItems")
        for params in h.calls.of(op)
        if not params.get("Key", {}).get(schema.PK, {}).get("S", "").startswith("drain#")
    ]


def _item_bytes(item) -> int:
    """DynamoDB's size of an item (names plus values; numbers counted as their digits, which is
    at least what DynamoDB counts): what its write units are charged on."""
    size = 0
    for name, value in item.items():
        size += len(name.encode())
        if isinstance(value, str):
            size += len(value.encode())
        elif hasattr(value, "value"):  # Binary
            size += len(value.value)
        else:
            size += len(str(value)) + 1
    return size


def test_a_stored_message_is_its_own_done_mark(lane, caplog):
    # Given a queued WhatsApp delivery carrying one text
    h = lane("messages")
    envelope = h.webhook_row(whatsapp(messages=[text_message("wamid.K1", "hello")]), tenant=WABA)
    row_before = h.row("webhook-log", envelope.id)
    h.send(envelope)
    h.calls.clear()

    # When the consumer takes it
    response, _ = h.poll(h.handler())

    # Then the message is stored by one conditional put, and nothing else is written
    assert response == {"batchItemFailures": []}
    assert h.data(*message_at("wamid.K1"))["text"] == "hello"
    assert _writes(h) == ["PutItem"]
    # And the row is exactly as the door wrote it
    assert h.row("webhook-log", envelope.id) == row_before
    assert _outcomes(caplog) == ["done"]


def test_a_second_copy_after_the_work_is_a_duplicate_that_changes_nothing(lane, caplog):
    # Given one delivery's message consumed once
    h = lane("messages")
    envelope = h.webhook_row(whatsapp(messages=[text_message("wamid.K2", "first")]), tenant=WABA)
    h.send(envelope)
    handler = h.handler()
    h.poll(handler)
    stored = h.data(*message_at("wamid.K2"))

    # When SQS (or Meta's retry through the door) brings the same envelope again
    h.send(envelope)
    response, _ = h.poll(handler)

    # Then it is acked as a duplicate and the stored message is untouched
    assert response == {"batchItemFailures": []}
    assert _outcomes(caplog) == ["done", "duplicate"]
    assert h.data(*message_at("wamid.K2")) == stored
    assert len(h.data_items(person())) == 1


def test_a_stale_status_is_work_done_not_a_duplicate(lane, caplog):
    # Given a message already read
    h = lane("messages")
    handler = h.handler()
    for name, ts in (("read", 30), ("delivered", 20)):
        h.send(h.webhook_row(whatsapp(statuses=[status("wamid.K3", name, ts=ts)]), tenant=WABA))
        h.poll(handler)

    # Then the late `delivered` was applied as a no-op, and reported done
    assert h.data(*status_at("wamid.K3"))["status"] == "read"
    assert _outcomes(caplog) == ["done", "done"]


def test_a_row_the_door_could_not_send_is_finished_and_leaves_the_pending_index(lane):
    # Given a row the door put in the pending index after a failed send, replayed by the sweeper
    h = lane("messages")
    envelope = h.webhook_row(whatsapp(messages=[text_message("wamid.K4")]), tenant=WABA)
    WebhookLog(boto3.client("dynamodb", region_name=REGION), "webhook-log").mark_unsent(
        envelope.id, envelope.created_at
    )
    h.send(envelope)
    h.calls.clear()

    # When the consumer takes it
    h.poll(h.handler())

    # Then the row is marked done and out of the index, in one transaction with the message
    row = h.row("webhook-log", envelope.id)
    assert row["status"] == schema.RowStatus.DONE
    assert schema.PENDING_SHARD not in row
    assert _writes(h) == ["TransactWriteItems"]
    assert h.data(*message_at("wamid.K4")) is not None


def test_a_task_that_called_the_vendor_keeps_its_done_mark(lane, caplog):
    # Given a task whose writes are standalone but which called out first
    h = lane("messages")
    envelope = h.webhook_row({"any": "payload"}, tenant=WABA)
    calls: list[str] = []

    def calls_out(ctx):
        calls.append(ctx.vendor.complete("say hi", timeout=1.0))
        return TaskResult(writes=(Put(Table.DATA, {schema.PK: "reply#1", schema.SK: "x"}, standalone=True),))

    handler = h.handler(tasks={"messages": calls_out}, vendor=FakeVendor())
    h.send(envelope)
    h.poll(handler)

    # When a second copy arrives
    h.send(envelope)
    h.poll(handler)

    # Then the row carried the done-mark, so the copy never called the vendor again
    assert h.row("webhook-log", envelope.id)["status"] == schema.RowStatus.DONE
    assert len(calls) == 1
    assert _outcomes(caplog) == ["done", "duplicate"]


def test_a_task_with_a_write_that_is_not_standalone_keeps_its_done_mark(lane):
    h = lane("messages")
    envelope = h.webhook_row({"any": "payload"}, tenant=WABA)

    def bound(_ctx):
        return TaskResult(writes=(Put(Table.DATA, {schema.PK: "bound#1", schema.SK: "x"}),))

    h.send(envelope)
    h.poll(h.handler(tasks={"messages": bound}))

    assert h.row("webhook-log", envelope.id)["status"] == schema.RowStatus.DONE
    assert h.data("bound#1", "x") is not None


def test_a_delivery_of_a_2_kb_text_costs_its_message_write_and_nothing_more(lane):
    # Given a 2 KB WhatsApp text, its row written by the door
    h = lane("messages")
    text = ("Could you check my order, it was due Tuesday. " * 44)[:2000]
    envelope = h.webhook_row(whatsapp(messages=[text_message("wamid.K6", text)]), tenant=WABA)
    row = h.row("webhook-log", envelope.id)
    h.send(envelope)
    h.calls.clear()

    h.poll(h.handler())

    # Then the only write is the message item, in the sender's partition, and the row the door
    # wrote stays under 1 KB
    [put] = h.calls.of("PutItem")
    assert (put["Item"][schema.PK]["S"], put["Item"][schema.SK]["S"]) == message_at("wamid.K6")
    assert _item_bytes(row) < 1024
    assert len(json.dumps(whatsapp(messages=[text_message("wamid.K6", text)]))) > 2000
