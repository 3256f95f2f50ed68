"""A reply Meta took and then reported `failed` (131047, 131026, ...) is failed with Meta's code,
counted in RepliesFailed by code once, whatever state the ai lane had recorded."""

from __future__ import annotations

import time

import pytest

from pipeline import metric_names
from pipeline.domain.dependencies import meta_send as ms
from pipeline.tasks import ai
from tests.support.aws import REPLY_CALLBACK_KEY
from tests.unit.consumer.handler_output import log_lines, stdout_records
from tests.unit.consumer.lane_env import with_lane
from tests.unit.tasks.payloads import FakeVendor
from tests.unit.tasks.reply_statuses import CUSTOMER, PHONE_ID, SHOP, WABA, failed_errors, put_reply, ref, reply
from tests.unit.tasks.reply_statuses import status_delivery as delivery

_RECENT = time.time() - 60
"""A customer message's time within the customer service window (24 h), as a live one is."""

REPLY_TO = {"channel": "whatsapp", "business_id": PHONE_ID, "recipient": CUSTOMER}


def _failed_counts(printed: list[dict]) -> tuple[dict[str, float], float]:
    """RepliesFailed by Code, and its series by Lane alone (the alarm's)."""
    by_code: dict[str, float] = {}
    total = 0.0
    for doc in printed:
        if metric_names.REPLIES_FAILED not in doc or doc.get(metric_names.LANE) != "messages":
            continue
        value = doc[metric_names.REPLIES_FAILED]
        count = sum(value) if isinstance(value, list) else value
        if metric_names.CODE in doc:
            by_code[doc[metric_names.CODE]] = by_code.get(doc[metric_names.CODE], 0) + count
        else:
            total += count
    return by_code, total


def test_a_reply_meta_took_and_then_reported_failed_is_failed_with_its_code_and_counted(lane, graph, capsys, caplog):
    # Given Meta takes the turn's reply, then reports it failed: outside the service window
    graph.configure(failed_code=131047, status_delay_ms=0)
    ai_lane = lane("ai")
    ai_lane.environ = {
        **with_lane(ai_lane.environ, options={"debounce_seconds": "0", "resolve_seconds": "0"}),
        "GRAPH_API_URL": graph.url,
    }
    payload = {"conversation": "conv-1", "message_id": "m1", "text": "open?", "sent_at": _RECENT, "reply_to": REPLY_TO}
    ai_lane.send(ai_lane.job_row("job-conv-1-m1", payload, tenant=SHOP, kind=ai.INBOUND))
    handler = ai_lane.handler(vendor=FakeVendor(answers=["We open at 10."]))
    for _ in range(3):
        ai_lane.poll(handler, visibility=0)  # stamp, turn, send
    key = {"pk": ai.conversation_pk(SHOP, "conv-1"), "sk": "reply#m1"}
    assert reply(ai_lane, key)["send_state"] == ms.SENT
    # When its statuses arrive on the messages lane, the failed one twice (Meta retries webhooks)
    messages = lane("messages")
    for _ in range(50):  # Meta's statuses come a moment after its answer
        if len(graph.statuses_delivered) == 2:
            break
        time.sleep(0.05)
    sent_status, failed_status = graph.statuses_delivered
    for body in (sent_status, failed_status, {**failed_status, "again": True}):
        messages.send(messages.webhook_row(body, tenant=PHONE_ID))
        messages.poll(messages.handler())
    # Then the reply is failed with Meta's code and both statuses noted on it
    stored = reply(messages, key)
    assert (stored["send_state"], stored["failed_code"], stored["send_error"]) == (ms.FAILED, 131047, "delivery_failed")
    assert {"status_sent", "status_failed"} <= set(stored)
    # And it is counted once, by code and in the alarm's series
    by_code, total = _failed_counts(stdout_records(capsys.readouterr().out))
    assert (by_code, total) == ({"131047": 1}, 1)
    # And the ai lane leaves it failed: nothing resent
    assert len(graph.outbox()) == 1
    assert [line for line in log_lines(caplog) if line.get("detail", {}).get("reply") == ms.UNANSWERED] == []


@pytest.mark.parametrize("state", [ms.CALLING, ms.UNKNOWN, ms.SENT])
def test_a_failed_status_fails_a_reply_in_any_state_meta_could_have_sent_it_from(lane, capsys, state):
    messages = lane("messages")
    key = put_reply(messages, state)
    body = delivery(ms.callback(ref(), REPLY_CALLBACK_KEY.encode()), status="failed", errors=failed_errors(131026))
    messages.send(messages.webhook_row(body, tenant=WABA))
    messages.poll(messages.handler())
    stored = reply(messages, key)
    assert (stored["send_state"], stored["failed_code"]) == (ms.FAILED, 131026)
    assert _failed_counts(stdout_records(capsys.readouterr().out)) == ({"131026": 1}, 1)


def test_a_failed_status_leaves_a_reply_meta_refused_as_it_was(lane, capsys):
    messages = lane("messages")
    key = put_reply(messages, ms.UNANSWERED, send_error="outside_service_window")
    body = delivery(ms.callback(ref(), REPLY_CALLBACK_KEY.encode()), status="failed", errors=failed_errors(131047))
    messages.send(messages.webhook_row(body, tenant=WABA))
    messages.poll(messages.handler())
    assert reply(messages, key)["send_state"] == ms.UNANSWERED
    assert _failed_counts(stdout_records(capsys.readouterr().out)) == ({}, 0)
