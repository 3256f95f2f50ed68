"""ai lane: a burst of messages gets one reply; stale turns are cheap no-ops."""

from __future__ import annotations

import json
import time

import boto3

from pipeline import schema
from pipeline.domain.dependencies.model import Completion
from pipeline.domain.envelope import Envelope
from pipeline.tasks import ai, turn_claims
from stacks.config.models import reply_model
from tests.support.aws import REGION
from tests.unit.consumer.handler_output import log_lines
from tests.unit.consumer.lane_env import internal, with_lane
from tests.unit.tasks.payloads import FakeVendor

SHOP = "shop-1"


def _inbound(h, message_id: str, sent_at: float, text: str = "hi"):
    payload = {"conversation": "conv-1", "message_id": message_id, "text": text, "sent_at": sent_at}
    return h.job_row(f"job-{message_id}", payload, tenant=SHOP, kind=ai.INBOUND)


def _drain(h, handler, rounds: int = 12) -> None:
    for _ in range(rounds):
        if h.depth() == 0:
            return
        h.poll(handler)


def _lane_and_model(lane, *, debounce_seconds: int):
    """The ai lane with its debounce, a model that answers "ok", and a handler using both."""
    h = lane("ai")
    vendor = FakeVendor()
    environ = with_lane(h.environ, options={"debounce_seconds": str(debounce_seconds)})
    return h, vendor, h.handler(environ, vendor=vendor)


def _outcomes(caplog, kind: str) -> list[str]:
    return sorted(line["outcome"] for line in log_lines(caplog) if line.get("kind") == kind)


def test_a_burst_of_three_messages_gets_one_reply(lane, caplog):
    # Given three messages from one customer, seconds apart
    h = lane("ai")
    environ = with_lane(h.environ, options={"debounce_seconds": "0"})
    for n, message_id in enumerate(("m1", "m2", "m3")):
        h.send(_inbound(h, message_id, sent_at=1000.0 + n))
    vendor = FakeVendor(answers=["We open at 10 on Sundays."])
    handler = h.handler(environ, vendor=vendor)
    # When the lane works through the messages and the turns they schedule
    _drain(h, handler)
    # Then each message scheduled a turn, the two older turns found a newer marker, and the model
    # was called once, for the newest message
    assert _outcomes(caplog, ai.TURN) == ["done", "superseded", "superseded"]
    assert len(vendor.prompts) == 1
    replies = [i for i in h.data_items(ai.conversation_pk(SHOP, "conv-1")) if i[schema.SK].startswith("reply#")]
    assert [(r[schema.SK], r["text"]) for r in replies] == [("reply#m3", "We open at 10 on Sundays.")]
    assert all(h.row("jobs", f"job-{m}")["status"] == schema.RowStatus.DONE for m in ("m1", "m2", "m3"))


def test_the_turn_is_scheduled_the_debounce_out(lane):
    h = lane("ai")
    h.send(_inbound(h, "m1", sent_at=1000.0))
    h.poll(h.handler(vendor=FakeVendor()))
    [params] = h.calls.of("SendMessageBatch")
    [entry] = params["Entries"]
    assert entry["DelaySeconds"] == 1  # the local lane's debounce_seconds
    turn = Envelope.from_json(entry["MessageBody"])
    assert (turn.kind, turn.source, turn.id) == (ai.TURN, "internal", ai.turn_id(SHOP, "conv-1", "m1"))


def test_an_older_message_processed_late_does_not_take_the_marker_back(lane, caplog):
    # Given the newer message stamped first, and the older one stamped after it, before any turn
    h, vendor, handler = _lane_and_model(lane, debounce_seconds=1)
    h.send(_inbound(h, "m2", sent_at=2000.0, text="on Sunday?"))
    h.poll(handler)
    h.send(_inbound(h, "m1", sent_at=1000.0, text="are you open"))
    h.poll(handler)
    time.sleep(1.1)
    _drain(h, handler)
    # Then the marker still names the newer message, whose turn alone answered, reading both
    marker = h.state(ai.marker_key(SHOP, "conv-1")[schema.PK])
    assert marker["token"] == "m2"
    assert _outcomes(caplog, ai.TURN) == ["done", "superseded"]
    assert vendor.prompts == ["are you open\non Sunday?"]
    # And the older message itself was kept with the conversation
    assert h.data(ai.conversation_pk(SHOP, "conv-1"), "in#m1") is not None


def test_an_older_message_stamped_after_the_newer_one_was_answered_gets_its_own_reply(lane, caplog):
    # Given the newer message answered, then an older one delivered late (Meta retrying a
    # delivery the door throttled, or one of the same second with a smaller id)
    h, vendor, handler = _lane_and_model(lane, debounce_seconds=0)
    h.send(_inbound(h, "m2", sent_at=2000.0, text="on Sunday?"))
    _drain(h, handler)
    assert vendor.prompts == ["on Sunday?"]
    h.send(_inbound(h, "m1", sent_at=1000.0, text="are you open"))
    _drain(h, handler)
    # Then its turn answers it (it was left behind, not superseded), the marker stays on the
    # newer message, and nothing is left unanswered
    assert vendor.prompts == ["on Sunday?", "are you open"]
    assert _outcomes(caplog, ai.TURN) == ["done", "done"]
    assert h.state(ai.marker_key(SHOP, "conv-1")[schema.PK])["token"] == "m2"
    assert h.data(ai.conversation_pk(SHOP, "conv-1"), "reply#m1")["text"] == "ok"
    assert not (h.data(ai.conversation_pk(SHOP, "conv-1"), ai.UNANSWERED_SK) or {}).get("waiting")
    # And it is answered once: its turn again is a duplicate, a newer turn finds nothing of it waiting
    h.send(_inbound(h, "m3", sent_at=3000.0, text="thanks"))
    _drain(h, handler)
    assert vendor.prompts == ["on Sunday?", "are you open", "thanks"]


def test_an_older_message_stamped_while_the_newer_turn_is_thinking_is_answered_after_it(lane, caplog):
    # Given the newer message's turn calling the model, having read the unanswered messages, and
    # an older message stamped meanwhile whose turn runs before that call returns
    h = lane("ai")
    environ = with_lane(h.environ, options={"debounce_seconds": "0"}, defer_seconds=1)
    h.send(_inbound(h, "m2", sent_at=2000.0, text="on Sunday?"))
    h.poll(h.handler(environ, vendor=FakeVendor()))  # the stamp
    meanwhile = h.handler(environ, vendor=FakeVendor())
    seen: list[str] = []

    class Thinking(FakeVendor):
        def complete(self, prompt: str, *, timeout: float) -> Completion:
            if not self.prompts:
                h.send(_inbound(h, "m1", sent_at=1000.0, text="are you open"))
                h.poll(meanwhile)  # m1 stamped
                h.poll(meanwhile)  # m1's turn
                seen.extend(_outcomes(caplog, ai.TURN))
            return super().complete(prompt, timeout=timeout)

    vendor = Thinking()
    handler = h.handler(environ, vendor=vendor)
    h.poll(handler)  # m2's turn
    # Then m1's turn was deferred, not superseded: m2's turn had read the set without it
    assert seen == ["deferred"]
    deferred = [line for line in log_lines(caplog) if line.get("outcome") == "deferred"]
    assert deferred[0]["detail"]["budget"] == "newer_turn_in_flight"
    # And once m2's reply is in, m1's turn comes back and answers it
    until = time.monotonic() + 15
    while h.depth() and time.monotonic() < until:
        h.poll(handler, visibility=0)
        time.sleep(0.2)
    assert vendor.prompts == ["on Sunday?", "are you open"]
    assert h.data(ai.conversation_pk(SHOP, "conv-1"), "reply#m1") is not None
    assert not (h.data(ai.conversation_pk(SHOP, "conv-1"), ai.UNANSWERED_SK) or {}).get("waiting")


def test_a_turn_whose_claim_was_taken_over_during_its_model_call_does_not_commit_its_reply(lane, caplog):
    # Given a turn calling the model while its claim passes to another turn (a copy that found it
    # expired, or a late message's turn), the marker still naming the same message
    h = lane("ai")
    environ = with_lane(h.environ, options={"debounce_seconds": "0"})
    h.send(_inbound(h, "m1", sent_at=1000.0))
    h.poll(h.handler(environ, vendor=FakeVendor()))  # the stamp
    state = boto3.resource("dynamodb", region_name=REGION).Table("state")

    class OvertakenVendor(FakeVendor):
        def complete(self, prompt: str, *, timeout: float) -> Completion:
            state.update_item(
                Key=ai.marker_key(SHOP, "conv-1"),
                UpdateExpression="SET turn_claim = :other",
                ExpressionAttributeValues={":other": "m1#another-copy"},
            )
            return super().complete(prompt, timeout=timeout)

    vendor = OvertakenVendor()
    h.poll(h.handler(environ, vendor=vendor))
    # Then its reply is dropped (the claim's holder answers), and the turn counts as superseded
    assert len(vendor.prompts) == 1
    assert h.data(ai.conversation_pk(SHOP, "conv-1"), "reply#m1") is None
    assert _outcomes(caplog, ai.TURN) == ["superseded"]


def test_an_sdk_retry_of_a_claim_that_landed_is_the_same_claim(lane, caplog, monkeypatch):
    # Given a turn's claim written by a first try whose answer was lost: the SDK sends the same
    # request again, so the marker already holds this very claim
    h = lane("ai")
    environ = with_lane(h.environ, options={"debounce_seconds": "0"})
    h.send(_inbound(h, "m1", sent_at=1000.0))
    h.poll(h.handler(environ, vendor=FakeVendor()))  # the stamp
    monkeypatch.setattr(turn_claims.secrets, "token_hex", lambda _: "f00d")
    boto3.resource("dynamodb", region_name=REGION).Table("state").update_item(
        Key=ai.marker_key(SHOP, "conv-1"),
        UpdateExpression="SET turn_claim = :mine, turn_claim_until = :until",
        ExpressionAttributeValues={":mine": "m1#f00d", ":until": int(time.time()) + 60},
    )
    vendor = FakeVendor()
    h.poll(h.handler(environ, vendor=vendor))
    # Then the turn goes on and answers, rather than waiting for its own claim to expire
    assert len(vendor.prompts) == 1
    assert _outcomes(caplog, ai.TURN) == ["done"]


def test_a_turn_that_arrives_before_its_stamp_is_retried_not_dropped(lane, caplog):
    # Given a turn whose message has not been stamped yet (its stamp's commit is still to come)
    h = lane("ai")
    h.send(
        internal(
            "ai",
            ai.turn_id(SHOP, "conv-1", "m1"),
            ai.TURN,
            {"conversation": "conv-1", "token": "m1", "seq": 1000.0},
            tenant=SHOP,
        )
    )
    response, _ = h.poll(h.handler(vendor=FakeVendor()))
    # Then it is retried, and nothing is marked done
    assert len(response["batchItemFailures"]) == 1
    [line] = [line for line in log_lines(caplog) if line.get("outcome") == "retried"]
    assert line["error_class"] == "TurnBeforeStamp"


def test_a_newer_message_arriving_during_the_model_call_wins(lane, caplog):
    # Given a turn in progress for m1, and m2 stamped while the model is thinking
    h = lane("ai")
    environ = with_lane(h.environ, options={"debounce_seconds": "0"})
    h.send(_inbound(h, "m1", sent_at=1000.0))
    state = boto3.resource("dynamodb", region_name=REGION).Table("state")

    class InterruptedVendor:
        calls = 0

        def complete(self, prompt: str, *, timeout: float) -> Completion:
            InterruptedVendor.calls += 1
            state.update_item(
                Key=ai.marker_key(SHOP, "conv-1"),
                UpdateExpression="SET #t = :m2, #s = :s",
                ExpressionAttributeNames={"#t": "token", "#s": "seq"},
                ExpressionAttributeValues={":m2": "m2", ":s": 2000},
            )
            return Completion("a reply nobody should see")

    _drain(h, h.handler(environ, vendor=InterruptedVendor()))
    # Then the stale reply is dropped and the turn counts as superseded
    assert InterruptedVendor.calls == 1
    assert h.data(ai.conversation_pk(SHOP, "conv-1"), "reply#m1") is None
    assert _outcomes(caplog, ai.TURN) == ["superseded"]


def test_a_model_that_is_unavailable_makes_the_turn_transient(lane, caplog, model):
    # Given Bedrock answering every Converse call with a 503
    h = lane("ai")
    model.configure(failure_rate=1.0, failure_code="ServiceUnavailableException")
    environ = with_lane(h.environ, options={"debounce_seconds": "0"})
    h.send(_inbound(h, "m1", sent_at=1000.0))
    handler = h.handler(environ)
    h.poll(handler)  # the stamp
    response, _ = h.poll(handler)  # the turn
    # Then the turn is retried with the model's error class, and nothing was answered
    assert len(response["batchItemFailures"]) == 1
    retried = [line for line in log_lines(caplog) if line.get("outcome") == "retried"]
    assert (retried[0]["error_class"], retried[0]["reason"]) == ("ModelUnavailable", "model_unavailable")
    assert h.data(ai.conversation_pk(SHOP, "conv-1"), "reply#m1") is None


def test_a_turn_is_answered_by_the_lanes_model_and_its_tokens_counted(lane, caplog, model):
    # Given the ai lane with no stand-in: its consumer calls Converse (the runtime's fake of it)
    h = lane("ai")
    environ = with_lane(h.environ, options={"debounce_seconds": "0"})
    h.send(_inbound(h, "m1", sent_at=1000.0, text="is the shop open on Sunday?"))
    _drain(h, h.handler(environ))
    # Then the reply is the model's, made with the lane's model, system prompt and limits
    reply = h.data(ai.conversation_pk(SHOP, "conv-1"), "reply#m1")
    assert reply["text"] == "Thanks for your message! (27 characters read)"
    [call] = model.calls()
    assert (call.model_id, call.outcome) == (reply_model().settings.model_id, "ok")
    # And the turn's line says what it cost
    [turn] = [line for line in log_lines(caplog) if line.get("kind") == ai.TURN and line.get("outcome") == "done"]
    assert turn["detail"]["model_input_tokens"] == call.input_tokens > 0
    assert turn["detail"]["model_output_tokens"] == call.output_tokens > 0


def test_unknown_work_on_the_ai_lane_is_dead_lettered(lane):
    h = lane("ai")
    h.send(internal("ai", "x-1", "ai.summarise", {}, tenant=SHOP))
    h.poll(h.handler(vendor=FakeVendor()))
    assert h.dead_letters()[0]["MessageAttributes"]["reason"]["StringValue"] == "unknown_kind"


def test_an_inbound_message_without_a_conversation_is_permanent(lane):
    h = lane("ai")
    h.send(h.job_row("job-bad", {"message_id": "m"}, tenant=SHOP, kind=ai.INBOUND))
    h.poll(h.handler(vendor=FakeVendor()))
    [dead] = h.dead_letters()
    assert dead["MessageAttributes"]["reason"]["StringValue"] == "bad_ai_payload"
    assert json.loads(dead["Body"])["id"] == "job-bad"


def test_a_conversation_id_never_reaches_the_logs(lane, caplog):
    # Given a conversation named after the customer's phone number: a turn that arrives before
    # its stamp (an error message), then the message and its turn (ids and outcome details)
    conversation = "wa-15551234567"
    h = lane("ai")
    environ = with_lane(h.environ, options={"debounce_seconds": "0"})
    handler = h.handler(environ, vendor=FakeVendor())
    early = {"conversation": conversation, "token": "m0", "seq": 1.0}
    h.send(internal("ai", ai.turn_id(SHOP, conversation, "m0"), ai.TURN, early, tenant=SHOP))
    h.poll(handler)
    payload = {"conversation": conversation, "message_id": "m1", "text": "hi", "sent_at": 1000.0}
    h.send(h.job_row("job-m1", payload, tenant=SHOP, kind=ai.INBOUND))
    _drain(h, handler)

    # When every log line is read with all its fields
    lines = log_lines(caplog)
    assert {"done", "retried"} <= set(_outcomes(caplog, ai.TURN))
    text = json.dumps(lines, default=str)

    # Then the conversation appears only as its ref, which its lines share
    assert conversation not in text
    assert "15551234567" not in text
    assert ai.conversation_ref(SHOP, conversation) in text


def test_the_coalesced_turn_prompts_with_every_message_since_the_last_reply_in_order(lane, caplog):
    # Given three messages seconds apart, stamped out of order
    h = lane("ai")
    environ = with_lane(h.environ, options={"debounce_seconds": "0"})
    vendor = FakeVendor(answers=["Yes, 10 to 4 on Sundays.", "You're welcome."])
    handler = h.handler(environ, vendor=vendor)
    burst = (("m2", 1001.0, "is the shop open"), ("m1", 1000.0, "hi"), ("m3", 1002.0, "on Sunday"))
    for message_id, sent_at, text in burst:
        h.send(_inbound(h, message_id, sent_at=sent_at, text=text))
    # When the lane works through them
    _drain(h, handler)
    # Then the one model call saw all three, oldest first
    assert vendor.prompts == ["hi\nis the shop open\non Sunday"]
    assert h.data(ai.conversation_pk(SHOP, "conv-1"), "reply#m3")["answers"] == "m3"
    # And the next message's turn answers only what came after that reply
    h.send(_inbound(h, "m4", sent_at=1010.0, text="thanks"))
    _drain(h, handler)
    assert vendor.prompts[1:] == ["thanks"]


def test_a_model_the_role_may_not_invoke_is_refused_and_the_turn_kept(lane, caplog, model):
    # Given the ai consumer told to call a model its role was not granted
    h = lane("ai")
    environ = with_lane(h.environ, options={"debounce_seconds": "0"})
    settings = json.loads(environ["MODEL_SETTINGS"])
    environ = {
        **environ,
        "MODEL_SETTINGS": json.dumps({**settings, "model_id": "anthropic.claude-3-opus-20240229-v1:0"}),
    }
    h.send(_inbound(h, "m1", sent_at=1000.0))
    handler = h.handler(environ)
    h.poll(handler)  # the stamp
    response, _ = h.poll(handler)  # the turn
    # Then IAM refuses the call before it reaches the model, and the turn is kept in the lane,
    # no attempt spent, with a reason that says the lane cannot use its model (not dead-lettered
    # as bad input): the lane pauses itself
    assert model.calls() == []
    assert response["batchItemFailures"] == []
    [held] = [line for line in log_lines(caplog) if line.get("outcome") == "deferred"]
    assert (held["reason"], held["detail"]["budget"]) == ("model_refused", "lane_paused")
    assert "bedrock:InvokeModel" in held["error"]
    assert h.dead_letters() == []


def test_the_tokens_a_lanes_model_calls_spend_are_summed_into_its_metrics(lane, capsys):
    # Given two conversations answered by a model that counts 40 tokens in and 9 out a call
    h = lane("ai")
    environ = with_lane(h.environ, options={"debounce_seconds": "0"})
    for conversation in ("conv-a", "conv-b"):
        payload = {"conversation": conversation, "message_id": "m1", "text": "hi", "sent_at": 1000.0}
        h.send(h.job_row(f"job-{conversation}", payload, tenant=SHOP, kind=ai.INBOUND))
    _drain(h, h.handler(environ, vendor=FakeVendor(tokens=(40, 9))))
    # Then the lane's token metrics add up what the calls spent
    totals: dict[str, float] = {}
    for line in capsys.readouterr().out.splitlines():
        if line.startswith('{"_aws"'):
            blob = json.loads(line)
            for directive in blob["_aws"]["CloudWatchMetrics"]:
                for metric in directive["Metrics"]:
                    if metric["Name"].startswith("Model"):
                        assert blob["Lane"] == "ai"
                        value = blob[metric["Name"]]
                        totals[metric["Name"]] = totals.get(metric["Name"], 0) + sum(
                            value if isinstance(value, list) else [value]
                        )
    assert totals == {"ModelInputTokens": 80, "ModelOutputTokens": 18}


def test_a_message_stamped_in_milliseconds_does_not_silence_the_later_ones(lane, caplog):
    # Given a customer's message whose time came in milliseconds (as Messenger and Instagram stamp
    # it), then a later one with no time of its own (the job's creation, in seconds, stands in)
    h = lane("ai")
    environ = with_lane(h.environ, options={"debounce_seconds": "0"})
    handler = h.handler(environ, vendor=FakeVendor())
    h.send(_inbound(h, "m1", sent_at=round((time.time() - 60) * 1000)))
    h.poll(handler)
    later = {"conversation": "conv-1", "message_id": "m2", "text": "still there?"}
    h.send(h.job_row("job-m2", later, tenant=SHOP, kind=ai.INBOUND))
    # When the lane works through both and their turns
    _drain(h, handler)
    # Then both times were read in seconds: the later message holds the marker and its turn answers
    marker = h.state(ai.marker_key(SHOP, "conv-1")[schema.PK])
    assert marker["token"] == "m2"
    assert time.time() - 120 < float(marker["seq"]) <= time.time()
    later_turn = ai.turn_id(SHOP, "conv-1", "m2")
    assert [line["outcome"] for line in log_lines(caplog) if line.get("id") == later_turn] == ["done"]
    assert h.data(ai.conversation_pk(SHOP, "conv-1"), "reply#m2") is not None


def test_a_message_time_far_ahead_of_ours_is_refused_and_stamps_nothing(lane, caplog):
    # Given a message claiming to be sent a day from now
    h = lane("ai")
    h.send(_inbound(h, "m1", sent_at=time.time() + 86_400))
    # When the lane takes it
    h.poll(h.handler(vendor=FakeVendor()))
    # Then it is refused for good, with a reason that says why, and the conversation has no marker
    [line] = [line for line in log_lines(caplog) if line.get("kind") == ai.INBOUND]
    assert (line["outcome"], line.get("reason")) == ("dead_lettered", "sent_at_in_future")
    assert h.state(ai.marker_key(SHOP, "conv-1")[schema.PK]) is None
