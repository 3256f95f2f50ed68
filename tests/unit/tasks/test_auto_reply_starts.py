"""What the messages lane hands the ai lane for each message of an auto-replying tenant
(tasks/auto_reply.py), called directly: which messages start a turn, and which hold the conversation."""

from __future__ import annotations

import time

from pipeline.settings.auto_reply import ANSWER, AutoReplySettings, TenantAutoReply
from pipeline.tasks import ai, auto_reply, meta
from stacks.config.environments import LOCAL_ASSETS, LOCAL_SHOP
from tests.unit.tasks.payloads import FakeContext, envelope

SHOP = LOCAL_ASSETS.tenants[LOCAL_SHOP]
CUSTOMER = "16505551234"


def _ctx(media: str = "leave", channels: tuple[str, ...] = ("whatsapp", "messenger", "instagram")) -> FakeContext:
    return FakeContext(
        envelope=envelope("messages", "whatsapp.messages", tenant=SHOP.waba[0], source="webhook"),
        payload={},
        auto_reply=AutoReplySettings(tenants={LOCAL_SHOP: TenantAutoReply(channels=channels, media=media)}),
        assets=LOCAL_ASSETS,
    )


def _message(kind: str = "text", text: str = "hi", **changes) -> meta.InboundMessage:
    fields = {
        "id": "wamid.A",
        "sender": CUSTOMER,
        "timestamp": int(time.time()),
        "type": kind,
        "text": text,
        "channel": "whatsapp",
        "tenant": SHOP.waba[0],
        "business_id": SHOP.phones[0],
        **changes,
    }
    return meta.InboundMessage(**fields)


def test_a_text_starts_an_ai_inbound_for_the_customer_replying_from_the_number_written_to():
    writes, starts, counts = auto_reply.turn_starts(_ctx(), [_message()])
    [start] = starts
    assert (start.envelope.lane, start.envelope.kind, start.envelope.tenant) == ("ai", ai.INBOUND, LOCAL_SHOP)
    assert start.envelope.payload["conversation"] == CUSTOMER
    assert start.envelope.payload["reply_to"] == {
        "channel": "whatsapp",
        "business_id": SHOP.phones[0],
        "recipient": CUSTOMER,
    }
    assert (writes, dict(counts)) == ([], {"started": 1})


def test_media_is_left_to_people_unless_the_tenant_answers_it():
    image = _message("image", "the red one?")
    assert auto_reply.turn_starts(_ctx(), [image])[1:] == ([], {"left": 1})
    [start] = auto_reply.turn_starts(_ctx(media=ANSWER), [image])[1]
    assert start.envelope.payload["text"] == "[image] the red one?"


def test_a_channel_the_tenant_left_off_starts_nothing():
    _, starts, counts = auto_reply.turn_starts(_ctx(channels=("messenger",)), [_message()])
    assert (starts, dict(counts)) == ([], {"off": 1})


def test_an_opt_out_keyword_holds_the_conversation_and_starts_nothing():
    writes, starts, counts = auto_reply.turn_starts(_ctx(), [_message(text="  Stop ")])
    assert starts == []
    assert dict(counts) == {"opted_out": 1}
    [hold] = writes
    assert hold.key["sk"] == "auto-reply"
    assert "opted_out_at" in hold.names.values()


def test_the_same_message_twice_starts_the_same_work_id():
    first = auto_reply.turn_starts(_ctx(), [_message()])[1][0].envelope.id
    again = auto_reply.turn_starts(_ctx(), [_message()])[1][0].envelope.id
    assert first == again
    assert CUSTOMER not in first


def test_a_customer_no_reply_could_be_addressed_to_starts_nothing():
    # Given a sender id no Send API takes as a recipient
    _, starts, counts = auto_reply.turn_starts(_ctx(), [_message(sender="../15551230001?x=")])
    # Then no turn is started, so none is refused for good on the ai lane
    assert (starts, dict(counts)) == ([], {"malformed": 1})


def test_an_echo_from_our_own_app_pauses_nothing_and_a_persons_does():
    # Given Instagram echoes with no metadata: one sent by the pipeline's app, one by the inbox's
    ctx = _ctx()
    ctx.auto_reply = AutoReplySettings(tenants=ctx.auto_reply.tenants, own_app_ids=("1517776481860111",))
    echo = {"direction": meta.OUTGOING, "sender": SHOP.instagram[0], "recipient": "17841400000000001"}
    ours = _message(channel="instagram", business_id=SHOP.instagram[0], app_id="1517776481860111", **echo)
    persons = _message(channel="instagram", business_id=SHOP.instagram[0], app_id="263902037430900", **echo)
    # Then ours holds nothing, the person's pauses the conversation
    assert auto_reply.turn_starts(ctx, [ours]) == ([], [], {})
    writes, starts, counts = auto_reply.turn_starts(ctx, [persons])
    assert (starts, dict(counts)) == ([], {"paused": 1})
    assert [write.names["#until"] for write in writes] == ["paused_until"]


def test_an_echo_says_which_app_sent_it_and_whether_it_carried_our_metadata():
    # Given Messenger echoes as Meta documents them, one carrying our replies' metadata
    def echo(**extra) -> dict:
        message = {"mid": "m_1", "text": "hi", "is_echo": True, "app_id": 1517776481860111, **extra}
        event = {"sender": {"id": "1077"}, "recipient": {"id": "2468"}, "timestamp": 1, "message": message}
        return {"object": "page", "entry": [{"id": "1077", "messaging": [event]}]}

    [plain] = meta.read(echo()).messages
    [marked] = meta.read(echo(metadata="lanes-reply")).messages
    # Then both name the app, and only ours is marked ours
    assert (plain.app_id, plain.ours, plain.direction) == ("1517776481860111", False, meta.OUTGOING)
    assert (marked.app_id, marked.ours) == ("1517776481860111", True)
