"""A replay after a fix, through the real consumer handler on moto: the task runs again although
the first run left its done-mark, its writes replace what the faulty run stored, and a second copy
of the same generation changes nothing."""

from __future__ import annotations

from dataclasses import replace

import boto3

from pipeline import schema
from pipeline.adapters.webhook_log import WebhookLog
from pipeline.domain import stored_text
from pipeline.domain.consumer.work import TaskResult
from pipeline.domain.effects import Put
from pipeline.tasks import messages as messages_task
from tests.support.aws import REGION
from tests.unit.consumer.handler_output import log_lines
from tests.unit.tasks.payloads import WABA, message_at, text_message, whatsapp


def _outcomes(caplog) -> list[str]:
    return [line["outcome"] for line in log_lines(caplog) if line["message"].startswith("record ")]


def _garbling(ctx) -> TaskResult:
    """The messages task with the bug the fix removes: it stores every text as "garbled"."""
    result = messages_task.run(ctx)
    writes = tuple(
        replace(w, item={**w.item, "text": "garbled"}) if isinstance(w, Put) and "text" in w.item else w
        for w in result.writes
    )
    return replace(result, writes=writes)


def _writes(h) -> list[str]:
    return [
        op
        for op in ("PutItem", "UpdateItem", "TransactWriteItems")
        for params in h.calls.of(op)
        if not params.get("Key", {}).get(schema.PK, {}).get("S", "").startswith("drain#")
    ]


def test_a_replay_reruns_the_task_once_per_generation(lane, caplog):
    # Given a delivery the faulty task processed: its message stored garbled, its row still queued
    h = lane("messages")
    envelope = h.webhook_row(whatsapp(messages=[text_message("wamid.R1", "where is my parcel")]), tenant=WABA)
    h.send(envelope)
    h.poll(h.handler(tasks={"messages": _garbling}))
    assert h.data(*message_at("wamid.R1"))["text"] == "garbled"
    row = h.row("webhook-log", envelope.id)
    fixed = h.handler()

    # When, after the fix, the same delivery is sent again as a plain copy (generation 0)
    h.send(envelope)
    h.poll(fixed)
    # Then it is a duplicate: the done-mark holds
    assert h.data(*message_at("wamid.R1"))["text"] == "garbled"

    # When it is replayed as generation 1
    h.calls.clear()
    h.send(replace(envelope, generation=1))
    h.poll(fixed)

    # Then the fixed task ran and its write replaced the faulty one, carrying its generation, by the
    # same one conditional put a first run makes; the row is untouched
    stored = h.data(*message_at("wamid.R1"))
    assert stored_text.read(stored["text"]) == "where is my parcel"
    assert stored[schema.GENERATION] == 1
    assert _writes(h) == ["PutItem"]
    assert h.row("webhook-log", envelope.id) == row

    # When generation 1 arrives a second time (the replay run twice, or SQS delivering twice)
    h.send(replace(envelope, generation=1))
    h.poll(h.handler(tasks={"messages": _garbling}))  # even a task that would write something else

    # Then nothing changes
    assert h.data(*message_at("wamid.R1")) == stored

    # And a later generation runs it again
    h.send(replace(envelope, generation=2))
    h.poll(fixed)
    assert h.data(*message_at("wamid.R1"))[schema.GENERATION] == 2
    assert _outcomes(caplog) == ["done", "duplicate", "done", "duplicate", "done"]


def test_a_row_finished_by_its_done_mark_is_reopened_once_per_generation(lane, caplog):
    # Given a delivery whose row is done (the door could not send it, the sweeper replayed it)
    h = lane("messages")
    envelope = h.webhook_row(whatsapp(messages=[text_message("wamid.R2", "hello")]), tenant=WABA)
    WebhookLog(boto3.client("dynamodb", region_name=REGION), "webhook-log").mark_unsent(
        envelope.id, envelope.created_at
    )
    h.send(envelope)
    h.poll(h.handler(tasks={"messages": _garbling}))
    assert h.row("webhook-log", envelope.id)["status"] == schema.RowStatus.DONE
    fixed = h.handler()

    # When it is replayed as generation 1, twice
    h.send(replace(envelope, generation=1))
    h.poll(fixed)
    h.send(replace(envelope, generation=1))
    h.poll(fixed)

    # Then the first copy ran the task and marked the row with its generation; the second is a duplicate
    row = h.row("webhook-log", envelope.id)
    assert (row["status"], row[schema.GENERATION]) == (schema.RowStatus.DONE, 1)
    stored = h.data(*message_at("wamid.R2"))
    assert (stored_text.read(stored["text"]), stored[schema.GENERATION]) == ("hello", 1)
    assert _outcomes(caplog) == ["done", "done", "duplicate"]


def test_generation_zero_costs_what_it_did(lane):
    # Given a fresh delivery of the pipeline's own traffic
    h = lane("messages")
    envelope = h.webhook_row(whatsapp(messages=[text_message("wamid.R3", "hi")]), tenant=WABA)
    h.send(envelope)
    h.calls.clear()

    h.poll(h.handler())

    # Then it is one conditional put of the message, as before replays existed, with no generation on it
    assert _writes(h) == ["PutItem"]
    [put] = h.calls.of("PutItem")
    assert "generation" not in put["Item"]
    assert "generation" not in str(put.get("ConditionExpression"))
    assert "generation" not in h.data(*message_at("wamid.R3"))
