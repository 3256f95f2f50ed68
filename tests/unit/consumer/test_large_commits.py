"""A delivery with more writes than one invocation can commit: its commit is priced by its writes
and made in batches, and what does not fit continues in a re-sent copy that keeps its progress,
instead of timing out again and again until the DLQ takes it."""

from __future__ import annotations

from tests.unit.consumer.handler_output import log_lines
from tests.unit.consumer.handler_seams import Context
from tests.unit.tasks.payloads import WABA, status, status_at, whatsapp

STATUSES = 60
CALL_SECONDS = 0.1
"""Each DynamoDB call: 60 statuses are six seconds of writes, more than the local lane's 5 s
invocation holds."""
TIMEOUT_SECONDS = 5.0


def test_a_delivery_too_large_to_commit_in_one_invocation_continues_and_loses_nothing(lane, caplog):
    # Given one delivery carrying sixty statuses, and invocations of the lane's 5 s against slow DynamoDB
    h = lane("messages")
    h.send(h.webhook_row(whatsapp(statuses=[status(f"wamid.{n}", "delivered") for n in range(STATUSES)]), tenant=WABA))
    handler = h.handler(slow={"dynamodb": CALL_SECONDS})
    # When the lane works through it
    responses = []
    for _ in range(8):
        if h.depth() == 0:
            break
        responses.append(h.poll(handler, context=Context(TIMEOUT_SECONDS))[0])
    # Then every invocation answered in time, none failed a record back, nothing was dead-lettered
    assert responses
    assert all(response == {"batchItemFailures": []} for response in responses), responses
    assert h.dead_letters() == []
    # and every status is stored
    stored = [h.data(*status_at(f"wamid.{n}")) for n in range(STATUSES)]
    assert all(item is not None and item["status"] == "delivered" for item in stored)
    # having continued at least once, at no cost in attempts, before it was done
    lines = [line for line in log_lines(caplog) if line["message"].startswith("record ")]
    outcomes = [(line["outcome"], line["attempt"]) for line in lines]
    assert outcomes[-1] == ("done", 1)
    assert ("deferred", 1) in outcomes[:-1]
    assert h.depth() == 0
