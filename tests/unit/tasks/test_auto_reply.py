"""Auto-reply end to end: a customer's message at the messages lane becomes one reply at the Graph
endpoint, with no job posted, unless a rule says it must not (unbound asset, auto-reply off, an
opt-out, a person's echo, the customer service window); replies fit the channel's limit."""

from __future__ import annotations

import hashlib
import json
import threading
import time

import boto3
import pytest

from local_aws.graph_fake import GraphFake
from ops.cost import pricing
from pipeline import schema
from pipeline.adapters.reply_switches import ReplySwitches
from pipeline.domain import reply_length, senders
from pipeline.domain.dependencies.model import ModelUnavailable
from pipeline.tasks import ai, reply_holds
from stacks.config.environments import LOCAL_ASSETS, LOCAL_SHOP
from tests.support.aws import META_ACCESS_TOKEN, REGION
from tests.unit.consumer.handler_output import log_lines
from tests.unit.consumer.lane_env import with_lane, without_auto_reply_debounce
from tests.unit.tasks.payloads import HARNESS_KEY, FakeVendor, person

SHOP = LOCAL_ASSETS.tenants[LOCAL_SHOP]
SHOP_WABA, SHOP_NUMBER, SHOP_PAGE = SHOP.waba[0], SHOP.phones[0], SHOP.pages[0]
ACME = LOCAL_ASSETS.tenants["acme"]
CUSTOMER = "16505551234"
PSID = "24518920114411111"


def whatsapp_texts(*texts: str, sent_at: float | None = None, waba: str = SHOP_WABA, number: str = SHOP_NUMBER):
    """A WhatsApp delivery as Meta documents it (Cloud API webhooks, `messages` field)."""
    now = int(sent_at if sent_at is not None else time.time())
    messages = [
        {
            "from": CUSTOMER,
            "id": "wamid.HBgLMTY1MDU1NTEyMzQVAgASGBQ" + hashlib.sha256(text.encode()).hexdigest()[:22].upper(),
            "timestamp": str(now - len(texts) + index),
            "type": "text",
            "text": {"body": text},
        }
        for index, text in enumerate(texts)
    ]
    return {
        "object": "whatsapp_business_account",
        "entry": [
            {
                "id": waba,
                "changes": [
                    {
                        "value": {
                            "messaging_product": "whatsapp",
                            "metadata": {"display_phone_number": "15550783881", "phone_number_id": number},
                            "contacts": [{"profile": {"name": "Sheena Nelson"}, "wa_id": CUSTOMER}],
                            "messages": messages,
                        },
                        "field": "messages",
                    }
                ],
            }
        ],
    }


def whatsapp_echo(text: str) -> dict:
    """A message a person sent the customer from the WhatsApp Business app (`smb_message_echoes`)."""
    return {
        "object": "whatsapp_business_account",
        "entry": [
            {
                "id": SHOP_WABA,
                "changes": [
                    {
                        "value": {
                            "messaging_product": "whatsapp",
                            "metadata": {"display_phone_number": "15550783881", "phone_number_id": SHOP_NUMBER},
                            "message_echoes": [
                                {
                                    "from": "15550783881",
                                    "to": CUSTOMER,
                                    "id": "wamid.HBgLMTY1MDU1NTEyMzQVAgARGBI5ECHO",
                                    "timestamp": str(int(time.time())),
                                    "type": "text",
                                    "text": {"body": text},
                                }
                            ],
                        },
                        "field": "smb_message_echoes",
                    }
                ],
            }
        ],
    }


def messenger_echo(text: str, *, ours: bool) -> dict:
    """The Page's own message to the customer as Meta echoes it; ours carries our replies' metadata."""
    message: dict = {"mid": "m_echo1", "text": text, "is_echo": True, "app_id": 1517776481860111}
    if ours:
        message["metadata"] = "lanes-reply"
    at = int(time.time() * 1000)
    return {
        "object": "page",
        "entry": [
            {
                "id": SHOP_PAGE,
                "time": at,
                "messaging": [
                    {"sender": {"id": SHOP_PAGE}, "recipient": {"id": PSID}, "timestamp": at, "message": message}
                ],
            }
        ],
    }


def messenger_text(text: str) -> dict:
    at = int(time.time() * 1000)
    return {
        "object": "page",
        "entry": [
            {
                "id": SHOP_PAGE,
                "time": at,
                "messaging": [
                    {
                        "sender": {"id": PSID},
                        "recipient": {"id": SHOP_PAGE},
                        "timestamp": at,
                        "message": {"mid": f"m_{text[:8]}", "text": text},
                    }
                ],
            }
        ],
    }


@pytest.fixture
def graph():
    fake = GraphFake(token=META_ACCESS_TOKEN)
    fake.start()
    yield fake
    fake.stop()


class Door:
    """The messages lane and the ai lane, as a delivery meets them after the door's 200."""

    def __init__(self, lane, graph) -> None:
        self.messages = lane("messages")
        self.messages.environ = without_auto_reply_debounce(self.messages.environ)
        self.ai = lane("ai")
        options = {"debounce_seconds": "0", "resolve_seconds": "0", "resolve_rounds": "2"}
        self.ai.environ = {**with_lane(self.ai.environ, options=options), "GRAPH_API_URL": graph.url}
        self.model = FakeVendor()

    def deliver(self, *payloads: dict, tenant: str = SHOP_WABA) -> None:
        handler = self.messages.handler()
        for payload in payloads:
            self.messages.send(self.messages.webhook_row(payload, tenant=tenant))
            response, _ = self.messages.poll(handler)
            assert response == {"batchItemFailures": []}

    def answer(self, within_seconds: float = 0.0) -> None:
        handler = self.ai.handler(vendor=self.model)
        until = time.monotonic() + within_seconds
        for _ in range(20 if not within_seconds else 10_000):
            if self.ai.depth() == 0:
                return
            self.ai.poll(handler, visibility=0)
            if within_seconds:
                if time.monotonic() > until:
                    break
                time.sleep(0.1)
        raise AssertionError("the ai lane did not drain")


@pytest.fixture
def door(lane, graph):
    return Door(lane, graph)


def _settled(caplog) -> list[str]:
    """What each settled turn's line says it was settled as."""
    return [line["detail"]["settled"] for line in log_lines(caplog) if "settled" in (line.get("detail") or {})]


def test_three_quick_whatsapp_texts_get_one_reply_at_the_graph_endpoint_and_no_job(door, graph, lane):
    # Given shop-1 (auto-reply on) and a customer's burst of three texts, as Meta delivers them
    door.deliver(whatsapp_texts("hi", "are you open", "on Sunday?"))
    # When the ai lane runs what the messages lane handed it
    door.answer()
    # Then the model was asked once, reading all three, and one reply went to the customer
    # from shop-1's number; no job was ever posted
    assert len(door.model.prompts) == 1
    assert door.model.prompts[0].split("\n") == ["hi", "are you open", "on Sunday?"]
    [sent] = graph.outbox()
    assert (sent.channel, sent.business_id, sent.recipient, sent.text) == ("whatsapp", SHOP_NUMBER, CUSTOMER, "ok")
    assert door.ai.dead_letters() == []


def test_a_message_delivered_twice_is_answered_once(door, graph):
    # Given Meta delivering one text, then the same text again batched with nothing else changed
    # but the delivery (a retry: a second log row)
    first = whatsapp_texts("do you deliver?")
    again = {**first, "entry": [{**first["entry"][0], "time": 1}]}
    door.deliver(first)
    door.answer()
    door.deliver(again)
    # When the ai lane runs again
    door.answer()
    # Then one model call and one reply
    assert len(door.model.prompts) == 1
    assert len(graph.outbox()) == 1


def test_a_message_delivered_again_after_its_reply_is_not_in_the_next_ones_prompt(door, graph):
    # Given a text answered, then delivered again by Meta in another delivery
    first = whatsapp_texts("do you deliver?")
    door.deliver(first)
    door.answer()
    door.deliver({**first, "entry": [{**first["entry"][0], "time": 2}]})
    door.answer()
    # When the customer writes again, a few seconds on
    door.deliver(whatsapp_texts("thanks", sent_at=time.time() + 5))
    door.answer()
    # Then the second reply answers the new text alone: the first is not back among the unanswered
    assert door.model.prompts == ["do you deliver?", "thanks"]
    assert len(graph.outbox()) == 2


def test_a_text_of_the_same_second_with_a_smaller_id_delivered_after_the_reply_is_answered(door, graph):
    # Given a text answered, then another of the same whole second whose Meta id orders before
    # the first's (ids are not in arrival order), delivered after the reply
    at = time.time()
    first, second = whatsapp_texts("do you deliver?", sent_at=at), whatsapp_texts("to Leeds?", sent_at=at)
    first["entry"][0]["changes"][0]["value"]["messages"][0]["id"] = "wamid.HBgLMTY1MDU1NTEyMzQVAgASGBQZZ"
    second["entry"][0]["changes"][0]["value"]["messages"][0]["id"] = "wamid.HBgLMTY1MDU1NTEyMzQVAgASGBQAA"
    door.deliver(first)
    door.answer()
    door.deliver(second)
    door.answer()
    # Then the late text gets a reply of its own, not left for the customer's next message
    assert door.model.prompts == ["do you deliver?", "to Leeds?"]
    assert len(graph.outbox()) == 2


def test_a_turn_start_sent_twice_by_an_sdk_retry_is_answered_once(door, graph):
    # Given the messages lane's SendMessage of a turn to the ai queue, which succeeded and whose
    # answer was lost, so botocore sent the same body again: two copies in the ai queue
    door.deliver(whatsapp_texts("do you deliver?"))
    started = door.ai.receive(visibility=0)
    assert len(started) == 1
    door.ai.send_raw(started[0]["Body"])
    assert door.ai.depth() == 2
    # When the ai lane takes both
    door.answer()
    # Then the model is asked once and one reply goes out
    assert door.model.prompts == ["do you deliver?"]
    assert len(graph.outbox()) == 1


def test_a_turn_taken_by_two_batches_at_once_asks_the_model_once(door, graph, caplog):
    # Given a turn in the ai queue twice (an SDK retry of the messages lane's SendMessage)
    door.deliver(whatsapp_texts("is the shop open?"))
    [turn] = door.ai.receive(visibility=0)
    door.ai.send_raw(turn["Body"])
    first, second = door.ai.receive(limit=1, visibility=60), door.ai.receive(limit=1, visibility=60)
    assert len(first) == len(second) == 1
    # When one instance takes the first copy, and another takes the second while the model is
    # still answering the first
    thinking, answered = threading.Event(), threading.Event()

    class SlowVendor(FakeVendor):
        def complete(self, prompt: str, *, timeout: float):
            thinking.set()
            answered.wait(10)
            return super().complete(prompt, timeout=timeout)

    model = SlowVendor()
    one = threading.Thread(target=door.ai.invoke, args=(door.ai.handler(vendor=model), first))
    one.start()
    assert thinking.wait(10)
    meanwhile = door.ai.invoke(door.ai.handler(vendor=model), second)
    answered.set()
    one.join(10)
    door.model = model
    door.answer(within_seconds=10)  # the deferred copy comes back a deferral later
    # Then the second copy was deferred without calling the model (no attempt spent), the first
    # answered, and the second, back later, found the turn done: one call, one reply
    assert meanwhile == {"batchItemFailures": []}
    deferred = [line for line in log_lines(caplog) if line.get("outcome") == "deferred"]
    assert [line["detail"]["budget"] for line in deferred] == ["turn_in_progress"]
    assert model.prompts == ["is the shop open?"]
    assert len(graph.outbox()) == 1
    assert sorted(line["outcome"] for line in log_lines(caplog) if line.get("kind") == ai.TURN) == [
        "deferred",
        "done",
        "duplicate",
    ]


def test_a_turn_whose_model_call_failed_gives_its_claim_back(door, graph, caplog):
    # Given a turn whose first model call fails (the model's 503)
    door.deliver(whatsapp_texts("any news?"))

    class FailsOnce(FakeVendor):
        def complete(self, prompt: str, *, timeout: float):
            if not self.prompts:
                self.prompts.append(prompt)
                raise ModelUnavailable("503 from the model")
            return super().complete(prompt, timeout=timeout)

    door.model = FailsOnce()
    # When the lane retries it at once
    door.answer()
    # Then the retry is not held off by the failed attempt's claim: it answers
    assert door.model.prompts == ["any news?", "any news?"]
    assert len(graph.outbox()) == 1
    assert not [line for line in log_lines(caplog) if (line.get("detail") or {}).get("budget") == "turn_in_progress"]


def test_an_unbound_asset_starts_nothing_and_sends_nothing(door, graph):
    # Given a delivery from a WhatsApp Business Account no tenant owns, one from shop-1's account
    # naming acme's phone-number id as the number written to, and shop-1's own customer's text
    door.deliver(whatsapp_texts("hello", waba="9990001"), tenant="9990001")
    door.deliver(whatsapp_texts("hello again", number=ACME.phones[0]))
    door.deliver(whatsapp_texts("and from me"))
    # When the ai lane runs
    door.answer()
    # Then only shop-1's own customer was answered, from shop-1's number
    assert door.model.prompts == ["and from me"]
    assert [(sent.business_id, sent.recipient) for sent in graph.outbox()] == [(SHOP_NUMBER, CUSTOMER)]


def test_a_tenant_without_auto_reply_is_left_to_its_products(door, graph):
    # Given acme, bound to its assets but without auto-reply, and shop-1 each get a text
    door.deliver(whatsapp_texts("hello acme", waba=ACME.waba[0], number=ACME.phones[0]), tenant=ACME.waba[0])
    door.deliver(whatsapp_texts("hello shop"))
    # When the ai lane runs
    door.answer()
    # Then only shop-1's customer was answered: acme's products decide for theirs
    assert door.model.prompts == ["hello shop"]
    assert [sent.business_id for sent in graph.outbox()] == [SHOP_NUMBER]


def test_a_tenant_turned_off_by_an_operator_gets_no_reply(door, graph, caplog):
    # Given an operator turned shop-1's auto-reply off
    switches = ReplySwitches(boto3.client("dynamodb", region_name=REGION), "state", "data", time.time)
    switches.tenant(reply_holds.tenant_switch_key(LOCAL_SHOP), on=False)
    # When a customer writes
    door.deliver(whatsapp_texts("anyone there?"))
    door.answer()
    # Then the turn is settled as off, without a model call or a send
    assert (door.model.prompts, graph.outbox()) == ([], [])
    assert _settled(caplog) == ["auto_reply_off"]
    # And once it is on again, the next message is answered
    switches.tenant(reply_holds.tenant_switch_key(LOCAL_SHOP), on=True)
    door.deliver(whatsapp_texts("hello?", sent_at=time.time() + 1))
    door.answer()
    assert len(graph.outbox()) == 1


def test_a_message_older_than_the_service_window_is_settled_without_a_call(door, graph, caplog):
    # Given a text sent 25 hours ago, delivered only now
    door.deliver(whatsapp_texts("still there?", sent_at=time.time() - 25 * 3600))
    # When its turn runs
    door.answer()
    # Then nothing was asked or sent, and the line says why
    assert (door.model.prompts, graph.outbox()) == ([], [])
    assert _settled(caplog) == [ai.OUTSIDE_SERVICE_WINDOW]


def test_a_persons_echo_pauses_the_model_in_that_conversation(door, graph, caplog):
    # Given a person at the shop wrote to the customer from the WhatsApp Business app
    door.deliver(whatsapp_echo("Hi Sheena, Sam here, I'll help you"))
    # When the customer answers
    door.deliver(whatsapp_texts("thanks Sam"))
    door.answer()
    # Then the model stays quiet in that conversation
    assert (door.model.prompts, graph.outbox()) == ([], [])
    assert _settled(caplog) == ["echo_pause"]
    # And the echo is stored as the shop's outgoing message, in the customer's conversation
    stored = [item for item in door.messages.data_items(person(CUSTOMER)) if item.get("direction") == "outgoing"]
    assert [(item["recipient"], item["sender"]) for item in stored] == [(CUSTOMER, "15550783881")]
    # And the pause is kept in the conversation with the customer's hash, where their erasure finds it
    key = reply_holds.hold_key(LOCAL_SHOP, CUSTOMER)
    hold = door.messages.data(key[schema.PK], key[schema.SK])
    assert hold[schema.SENDER_HASH] == senders.sender_hash(HARNESS_KEY, CUSTOMER)


def test_an_echo_of_our_own_reply_does_not_pause(door, graph):
    # Given Meta echoing a reply the pipeline sent on Messenger
    door.deliver(messenger_echo("ok", ours=True), tenant=SHOP_PAGE)
    # When the customer writes again
    door.deliver(messenger_text("one more question"), tenant=SHOP_PAGE)
    door.answer()
    # Then it is answered through the Page
    [sent] = graph.outbox()
    assert (sent.channel, sent.business_id, sent.recipient) == ("send_api", SHOP_PAGE, PSID)


def test_a_persons_messenger_echo_pauses(door, graph, caplog):
    # Given a person at the shop wrote to the customer from the Page inbox
    door.deliver(messenger_echo("Sam here", ours=False), tenant=SHOP_PAGE)
    # When the customer answers
    door.deliver(messenger_text("thanks"), tenant=SHOP_PAGE)
    door.answer()
    # Then the model stays quiet
    assert (door.model.prompts, graph.outbox()) == ([], [])
    assert _settled(caplog) == ["echo_pause"]


def test_an_opt_out_keyword_stops_auto_replies_to_that_customer(door, graph, caplog):
    # Given the customer sends STOP
    door.deliver(whatsapp_texts(" stop "))
    door.answer()
    # When they write again later
    door.deliver(whatsapp_texts("what time do you close?", sent_at=time.time() + 1))
    door.answer()
    # Then nothing was asked or sent
    assert (door.model.prompts, graph.outbox()) == ([], [])
    assert _settled(caplog) == ["opted_out"]


def test_a_reply_over_whatsapps_limit_is_cut_before_the_send(door, graph):
    # Given the model answers with 5,000 characters
    door.model.answers.append("word " * 1000)
    door.deliver(whatsapp_texts("tell me everything"))
    # When it is sent
    door.answer()
    # Then what reached Meta fits WhatsApp's 4,096 and says it was cut
    [sent] = graph.outbox()
    assert reply_length.units(sent.text) <= 4096
    assert sent.text.endswith("word…")


# What `lanectl plan` says auto-reply adds on the messages lane (ops/cost/pricing.py AUTO_REPLY_*)
# is what the lane's calls spend.
ITEM_UNIT_BYTES = 1024


def _spent(h) -> tuple[int, int, int]:
    """(write units, read units, SQS sends) of the calls since the last count; every item here is
    under 1 KB (asserted), so a write is one unit, two in a transaction, a consistent read one."""
    writes = reads = sends = 0
    for service, name, params in h.calls.made:
        if name == "TransactWriteItems":
            items = [item for entry in params["TransactItems"] for item in entry.values()]
            assert all(len(json.dumps(item)) < ITEM_UNIT_BYTES for item in items)
            writes += 2 * len(items)
        elif name in ("PutItem", "UpdateItem"):
            writes += 1
        elif name == "GetItem":
            assert params.get("ConsistentRead") is True
            reads += 1
        elif service == "sqs" and name in ("SendMessage", "SendMessageBatch"):
            sends += len(params.get("Entries", [params]))
    h.calls.clear()
    return writes, reads, sends


def test_a_text_that_starts_a_turn_spends_what_the_plan_prices(door):
    h = door.messages
    h.calls.clear()
    # Given a text to shop-1, which auto-replies, and one to acme, which does not
    door.deliver(whatsapp_texts("are you open?"))
    answered = _spent(h)
    door.deliver(whatsapp_texts("are you open?", waba=ACME.waba[0], number=ACME.phones[0]), tenant=ACME.waba[0])
    plain = _spent(h)
    # Then the difference is the plan's
    assert answered[0] - plain[0] == pricing.AUTO_REPLY_WRITES
    assert answered[1] - plain[1] == pricing.AUTO_REPLY_READS
    assert answered[2] - plain[2] == pricing.AUTO_REPLY_SQS
