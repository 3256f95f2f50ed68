"""ai lane: a turn's reply is sent to the customer through Meta, at most once, and a reply whose
send outcome is unknown is resolved by Meta's status or left unanswered, never sent twice."""

from __future__ import annotations

import time

import pytest

from pipeline import schema
from pipeline.domain.dependencies import meta_send as ms
from pipeline.tasks import ai, replies
from tests.support.aws import REPLY_CALLBACK_KEY
from tests.unit.consumer.handler_output import log_lines
from tests.unit.consumer.lane_env import with_dependency, with_lane
from tests.unit.tasks.payloads import FakeVendor

_RECENT = time.time() - 60
"""A customer message's time within the customer service window (24 h), as a live one is."""

SHOP = "shop-1"
PHONE_ID = "1098765"
CUSTOMER = "15551230001"
REPLY_TO = {"channel": "whatsapp", "business_id": PHONE_ID, "recipient": CUSTOMER}


@pytest.fixture
def ai_lane(lane, graph):
    h = lane("ai")
    options = {"debounce_seconds": "0", "resolve_seconds": "0", "resolve_rounds": "2"}
    h.environ = {**with_lane(h.environ, options=options), "GRAPH_API_URL": graph.url}
    return h


def _message(h, message_id: str = "m1", reply_to=REPLY_TO, conversation: str = "conv-1"):
    payload = {"conversation": conversation, "message_id": message_id, "text": "open on Sunday?", "sent_at": _RECENT}
    if reply_to is not None:
        payload["reply_to"] = reply_to
    h.send(h.job_row(f"job-{conversation}-{message_id}", payload, tenant=SHOP, kind=ai.INBOUND))


def _drain(h, handler, rounds: int = 16) -> None:
    for _ in range(rounds):
        if h.depth() == 0:
            return
        h.poll(handler, visibility=0)


def _reply(h, token: str = "m1", conversation: str = "conv-1"):
    return h.data(ai.conversation_pk(SHOP, conversation), f"reply#{token}")


def test_a_turns_reply_is_sent_once_and_the_stored_reply_says_what_and_metas_id(ai_lane, graph, caplog):
    _message(ai_lane)
    _drain(ai_lane, ai_lane.handler(vendor=FakeVendor(answers=["We open at 10."])))
    [sent] = graph.outbox()
    assert (sent.channel, sent.business_id, sent.recipient, sent.text) == (
        "whatsapp",
        PHONE_ID,
        CUSTOMER,
        "We open at 10.",
    )
    reply = _reply(ai_lane)
    assert (reply["send_state"], reply["message_id"], reply["sent_text"], reply["send_attempts"]) == (
        ms.SENT,
        sent.message_id,
        "We open at 10.",
        1,
    )
    # The callback names this attempt, and no line carries the customer's number or the text
    assert ms.read_callback(sent.callback, [REPLY_CALLBACK_KEY.encode()]) == (SHOP, "conv-1", "m1", 1, PHONE_ID)
    assert CUSTOMER not in caplog.text
    assert "We open at 10." not in caplog.text


def test_without_reply_to_a_reply_is_only_stored(ai_lane, graph):
    _message(ai_lane, reply_to=None)
    _drain(ai_lane, ai_lane.handler(vendor=FakeVendor()))
    assert graph.outbox() == []
    assert "send_state" not in _reply(ai_lane)


def test_a_lost_answer_is_resolved_by_metas_status_and_never_resent(ai_lane, graph, lane):
    # Given Meta sends the reply but its answer never reaches the consumer
    graph.configure(lost_answer_rate=1.0, hold_seconds=0.05, status_delay_ms=0)
    _message(ai_lane)
    handler = ai_lane.handler(vendor=FakeVendor())
    for _ in range(3):
        ai_lane.poll(handler, visibility=0)  # stamp, turn, send
    assert _reply(ai_lane)["send_state"] == ms.UNKNOWN
    # When WhatsApp's status for it arrives on the messages lane
    messages = lane("messages")
    [status] = graph.statuses_delivered
    messages.send(messages.webhook_row(status, tenant=PHONE_ID))
    messages.poll(messages.handler())
    _drain(ai_lane, handler)
    # Then the reply is sent with Meta's id, from the status, and it went out once
    [sent] = graph.outbox()
    reply = _reply(ai_lane)
    assert (reply["send_state"], reply["message_id"], reply["resolved_by"]) == (ms.SENT, sent.message_id, "status")


def test_a_lost_answer_no_status_resolves_is_left_unanswered_and_counted(ai_lane, graph, caplog):
    graph.configure(lost_answer_rate=1.0, hold_seconds=0.05, statuses=False)
    _message(ai_lane)
    _drain(ai_lane, ai_lane.handler(vendor=FakeVendor()))
    assert len(graph.outbox()) == 1
    reply = _reply(ai_lane)
    assert (reply["send_state"], reply["send_error"]) == (ms.UNANSWERED, "outcome_unknown")
    unanswered = [line for line in log_lines(caplog) if line.get("detail", {}).get("reply") == ms.UNANSWERED]
    assert len(unanswered) == 1
    assert unanswered[0]["kind"] == replies.RESOLVE


def test_a_rate_limit_is_retried_and_the_reply_sent_once_it_passes(ai_lane, graph, caplog):
    graph.configure(error_code=130429, error_rate=1.0)
    _message(ai_lane)
    handler = ai_lane.handler(vendor=FakeVendor())
    for _ in range(3):
        ai_lane.poll(handler, visibility=0)
    assert graph.outbox() == []
    assert (_reply(ai_lane)["send_state"], _reply(ai_lane)["send_error"]) == (ms.RETRY, "meta_rate_limited")
    [retried] = [line for line in log_lines(caplog) if line.get("outcome") == "retried"]
    assert retried["reason"] == "meta_rate_limited"
    assert retried["visibility_seconds"] >= 1  # no sooner than Meta asks: never at once
    # and the number is held for its second on every instance: each slice of it marked full
    slices = [
        item
        for item in ai_lane.dynamodb.Table("state").scan()["Items"]
        if item[schema.PK].startswith(f"rate#meta#{PHONE_ID}#")
    ]
    full = max(item["calls"] for item in slices)
    held = sorted(int(item[schema.PK].rsplit("#", 1)[1]) for item in slices if item["calls"] == full)
    assert len(held) >= 9
    assert held == list(range(held[0], held[0] + len(held)))  # one run of slices, from the refusal on
    # (the send's own slice may be an earlier one, when the refusal came in the next slice)
    assert all(int(i[schema.PK].rsplit("#", 1)[1]) < held[0] for i in slices if i["calls"] != full)
    graph.configure(error_rate=0.0)
    waited_until = time.monotonic() + 15
    while ai_lane.depth() and time.monotonic() < waited_until:  # the retry's visibility
        ai_lane.poll(handler, visibility=0)
        time.sleep(0.2)
    assert len(graph.outbox()) == 1
    assert (_reply(ai_lane)["send_state"], _reply(ai_lane)["send_attempts"]) == (ms.SENT, 2)


def test_a_pair_rate_refusal_is_retried_no_sooner_than_metas_six_seconds(ai_lane, graph, caplog):
    # Given Meta refusing the customer's reply for the pair rate (one message every 6 s or so to
    # one customer), on a lane whose own backoff starts from nothing
    graph.configure(error_code=131056, error_rate=1.0)
    _message(ai_lane)
    handler = ai_lane.handler(vendor=FakeVendor())
    # When the turn's reply comes to be sent
    for _ in range(3):
        ai_lane.poll(handler, visibility=0)  # stamp, turn, send
    # Then nothing was sent, and the reply comes back to be sent again 6 to 12 s later
    assert graph.outbox() == []
    [retried] = [line for line in log_lines(caplog) if line.get("outcome") == "retried"]
    assert retried["reason"] == "meta_rate_limited"
    assert 6 <= retried["visibility_seconds"] <= 12


@pytest.mark.parametrize(("code", "reason"), [(131047, "outside_service_window"), (131026, "undeliverable")])
def test_a_reply_meta_will_never_send_is_unanswered_with_its_reason(ai_lane, graph, code, reason):
    graph.configure(error_code=code, error_rate=1.0)
    _message(ai_lane)
    _drain(ai_lane, ai_lane.handler(vendor=FakeVendor()))
    assert graph.outbox() == []
    assert (_reply(ai_lane)["send_state"], _reply(ai_lane)["send_error"]) == (ms.UNANSWERED, reason)
    assert ai_lane.dead_letters() == []


def test_a_revoked_token_says_the_lane_should_stop_and_sends_nothing(ai_lane, graph, caplog):
    graph.configure(revoked=True)
    _message(ai_lane)
    handler = ai_lane.handler(vendor=FakeVendor())
    for _ in range(3):
        ai_lane.poll(handler, visibility=0)
    assert graph.outbox() == []
    # Kept in the lane for its resumption, no attempt spent (the lane pauses itself)
    [held] = [line for line in log_lines(caplog) if line.get("outcome") == "deferred"]
    assert (held["reason"], held["detail"]["budget"]) == ("meta_token_invalid", "lane_paused")
    assert ai_lane.dead_letters() == []
    assert _reply(ai_lane)["send_state"] == ms.RETRY


def test_a_copy_that_finds_an_attempt_in_flight_does_not_send_again(ai_lane, graph):
    # Given a reply whose attempt was recorded by a copy that then died mid-send
    _message(ai_lane)
    handler = ai_lane.handler(vendor=FakeVendor())
    for _ in range(2):
        ai_lane.poll(handler, visibility=0)  # stamp, turn: the send is queued
    key = replies.reply_key(ai.conversation_pk(SHOP, "conv-1"), "m1")
    ai_lane.dynamodb.Table("data").update_item(
        Key=key,
        UpdateExpression="SET send_state = :calling, send_attempts = :one",
        ExpressionAttributeValues={":calling": ms.CALLING, ":one": 1},
    )
    graph.configure(statuses=False)
    _drain(ai_lane, handler)
    # Then nothing is sent again: the unknown attempt ends unanswered
    assert graph.outbox() == []
    assert _reply(ai_lane)["send_state"] == ms.UNANSWERED


def test_a_messenger_reply_goes_through_the_send_api(ai_lane, graph):
    _message(ai_lane, reply_to={"channel": "messenger", "business_id": "1077", "recipient": "9009"})
    _drain(ai_lane, ai_lane.handler(vendor=FakeVendor(answers=["Hello!"])))
    [sent] = graph.outbox()
    assert (sent.channel, sent.business_id, sent.recipient, sent.text) == ("send_api", "1077", "9009", "Hello!")
    reply = _reply(ai_lane)
    assert (reply["send_state"], reply["message_id"]) == (ms.SENT, sent.message_id)
    assert reply["message_id"].startswith("m_")


def test_a_reply_to_that_names_no_channel_is_refused_with_its_reason(ai_lane, graph):
    _message(ai_lane, reply_to={"channel": "sms", "business_id": "x", "recipient": "y"})
    _drain(ai_lane, ai_lane.handler(vendor=FakeVendor()))
    [dead] = ai_lane.dead_letters()
    assert dead["MessageAttributes"]["reason"]["StringValue"] == "reply_to_malformed"
    assert graph.outbox() == []


@pytest.mark.parametrize(
    ("status", "body", "kind", "reason"),
    [
        (429, {"error": {"code": 130429, "message": "(#130429) Rate limit hit"}}, ms.SendRefused, "meta_rate_limited"),
        (429, {"error": {"code": 131056, "message": "pair rate limit"}}, ms.SendRefused, "meta_rate_limited"),
        (400, {"error": {"code": 80007, "message": "Rate limit issues"}}, ms.SendRefused, "meta_rate_limited"),
        (400, {"error": {"code": 131047, "message": "Re-engagement"}}, ms.SendRejected, "outside_service_window"),
        (400, {"error": {"code": 131026, "message": "Undeliverable"}}, ms.SendRejected, "undeliverable"),
        (
            401,
            {"error": {"code": 190, "message": "Error validating access token"}},
            ms.TokenInvalid,
            "meta_token_invalid",
        ),
        (
            503,
            {"error": {"code": 2, "message": "Service temporarily unavailable", "is_transient": True}},
            ms.SendRefused,
            "meta_refused",
        ),
        (503, {"error": {"code": 131016, "message": "Service unavailable"}}, ms.SendRefused, "meta_refused"),
        (503, {}, ms.OutcomeUnknown, "meta_server_error"),
        (
            500,
            {"error": {"code": 1, "message": "An unknown error has occurred."}},
            ms.OutcomeUnknown,
            "meta_server_error",
        ),
        (500, {"error": {"code": 131000, "message": "Something went wrong"}}, ms.OutcomeUnknown, "meta_server_error"),
        (502, None, ms.OutcomeUnknown, "meta_server_error"),
        (504, {}, ms.OutcomeUnknown, "meta_server_error"),
        (400, {"error": {"code": 100, "message": "Invalid parameter"}}, ms.SendRejected, "meta_rejected"),
    ],
)
def test_metas_error_codes_are_classed(status, body, kind, reason):
    error = ms.error_for(status, body)
    assert isinstance(error, kind)
    assert error.reason == reason


def test_an_attempts_reference_comes_back_as_it_went_and_nothing_else_reads_as_one():
    key = REPLY_CALLBACK_KEY.encode()
    ref = ms.callback(ms.CallbackRef(SHOP, "+15551230001", "m1", 3, PHONE_ID), key)
    assert ms.read_callback(ref, [key]) == (SHOP, "+15551230001", "m1", 3, PHONE_ID)
    assert "15551230001" not in ref
    assert len(ref) <= ms.CALLBACK_LIMIT
    assert ms.read_callback("someone-elses-data", [key]) is None
    assert ms.read_callback("lanes2:!!!", [key]) is None
    assert ms.read_callback(ref, [b"another-key-0123456789abcdefghijklmn"]) is None


def test_a_reference_meta_would_refuse_for_its_length_is_refused_before_any_attempt():
    with pytest.raises(ms.PermanentError) as refused:
        ms.callback(ms.CallbackRef(SHOP, "c" * 400, "m1", 1, PHONE_ID), REPLY_CALLBACK_KEY.encode())
    assert refused.value.reason == "reply_reference_too_long"


def test_a_send_past_the_numbers_rate_is_deferred_before_any_attempt_is_recorded(ai_lane, graph):
    # Given a number allowed 3 messages a second (one a one-second slice), every slice of the
    # next minute already full
    ai_lane.environ = {**ai_lane.environ, "META_MESSAGES_PER_SECOND": "3"}
    state = ai_lane.dynamodb.Table("state")
    now = int(time.time())
    for second in range(now - 1, now + 60):
        state.put_item(Item={"pk": f"rate#meta#{PHONE_ID}#{second}", "calls": 1})
    # When the turn's reply comes to be sent
    _message(ai_lane)
    handler = ai_lane.handler(vendor=FakeVendor())
    for _ in range(3):
        ai_lane.poll(handler, visibility=0)  # stamp, turn, send
    # Then nothing went to Meta, the reply still waits with no attempt, and the send is still queued
    assert graph.outbox() == []
    assert graph.refused() == []
    reply = _reply(ai_lane)
    assert reply["send_state"] == ms.PENDING
    assert "send_attempts" not in reply
    assert ai_lane.depth() == 1
    # And once the number has room it goes out once, as the first attempt
    for second in range(now - 1, now + 60):
        state.delete_item(Key={"pk": f"rate#meta#{PHONE_ID}#{second}"})
    handler = ai_lane.handler(vendor=FakeVendor())
    waited_until = time.monotonic() + 15
    while ai_lane.depth() and time.monotonic() < waited_until:  # the deferral's delay
        ai_lane.poll(handler, visibility=0)
        time.sleep(0.2)
    assert len(graph.outbox()) == 1
    assert (_reply(ai_lane)["send_state"], _reply(ai_lane)["send_attempts"]) == (ms.SENT, 1)


def test_a_turn_past_the_models_requests_a_minute_is_deferred_without_asking_the_model(ai_lane, graph):
    # Given the llm dependency allowed 3 requests a minute, this minute and the next already full
    ai_lane.environ = with_dependency(ai_lane.environ, "llm", limit=2, requests_per_minute=3)
    state = ai_lane.dynamodb.Table("state")
    minute = int(time.time() // 60)
    full = [f"rate#model#llm#{n}" for n in (minute, minute + 1)]
    for key in full:
        state.put_item(Item={"pk": key, "calls": 1})
    # When a customer's message comes to be answered
    vendor = FakeVendor()
    _message(ai_lane)
    handler = ai_lane.handler(vendor=vendor)
    for _ in range(2):
        ai_lane.poll(handler, visibility=0)  # stamp, turn (deferred)
    # Then the model was not asked, and the turn waits on the lane
    assert vendor.prompts == []
    assert _reply(ai_lane) is None
    assert ai_lane.depth() == 1
    # And once the minute has room the turn is answered and sent (by an instance that has not
    # seen this minute full: a slice's count never falls, so the first one stops asking)
    for key in full:
        state.delete_item(Key={"pk": key})
    handler = ai_lane.handler(vendor=vendor)
    waited_until = time.monotonic() + 15
    while ai_lane.depth() and time.monotonic() < waited_until:
        ai_lane.poll(handler, visibility=0)
        time.sleep(0.2)
    assert len(vendor.prompts) == 1
    assert len(graph.outbox()) == 1
