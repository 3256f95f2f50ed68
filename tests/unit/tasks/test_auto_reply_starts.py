"""What the messages lane hands the ai lane for each message of an auto-replying tenant
(tasks/auto_reply.py), called directly: which messages start a turn, and which hold the conversation."""

from __future__ import annotations

import time

from pipeline.domain.effects import Table
from pipeline.settings.auto_reply import ANSWER, AutoReplySettings, TenantAutoReply
from pipeline.tasks import ai, auto_reply, meta
from pipeline.tasks.conversations import marker_key
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


def test_a_text_is_stamped_here_and_its_turn_scheduled_on_the_ai_lane_one_debounce_out():
    writes, starts, counts = auto_reply.turn_starts(_ctx(), [_message()])
    [start] = starts
    assert (start.envelope.lane, start.envelope.kind, start.envelope.tenant) == ("ai", ai.TURN, LOCAL_SHOP)
    assert start.delay_seconds == 4  # the settings' debounce: the source's 4 s unless the ai lane says otherwise
    assert (start.envelope.payload["conversation"], start.envelope.payload["token"]) == (CUSTOMER, "wamid.A")
    assert start.envelope.payload["reply_to"] == {
        "channel": "whatsapp",
        "business_id": SHOP.phones[0],
        "recipient": CUSTOMER,
    }
    assert start.envelope.payload["auto"] is True
    # And the stamp is written with the message: the marker, the message for the prompt, the unanswered set
    marker, stored, unanswered = writes
    assert (marker.table, marker.key, marker.values[":token"]) == (
        Table.STATE,
        marker_key(LOCAL_SHOP, CUSTOMER),
        "wamid.A",
    )
    assert stored.item["sk"] == "in#wamid.A"
    assert stored.item["text"] == "hi"
    assert unanswered.key == ai.unanswered_key(LOCAL_SHOP, CUSTOMER)
    assert dict(counts) == {"started": 1}


def test_a_burst_in_one_delivery_is_one_stamp_and_one_turn_for_its_newest_message():
    now = int(time.time())
    burst = [
        _message(id="wamid.A", text="hi", timestamp=now - 2),
        _message(id="wamid.C", text="on Sunday", timestamp=now),
        _message(id="wamid.B", text="are you open", timestamp=now - 1),
    ]
    writes, starts, counts = auto_reply.turn_starts(_ctx(), burst)
    [start] = starts
    assert start.envelope.payload["token"] == "wamid.C"
    markers = [w for w in writes if w.table is Table.STATE]
    assert [m.values[":token"] for m in markers] == ["wamid.C"]
    assert sorted(w.item["sk"] for w in writes if hasattr(w, "item")) == ["in#wamid.A", "in#wamid.B", "in#wamid.C"]
    [unanswered] = [
        w
        for w in writes
        if w.table is Table.DATA and getattr(w, "key", None) == ai.unanswered_key(LOCAL_SHOP, CUSTOMER)
    ]
    assert len(unanswered.values[":entry"]) == 3
    assert dict(counts) == {"started": 3}


def test_a_message_stamped_before_starts_nothing_again():
    # Given an earlier delivery of the message stamped it (its turn may have answered it since)
    ctx = _ctx()
    ctx.put(Table.DATA, ai.stored_key(LOCAL_SHOP, CUSTOMER, "wamid.A"), {"text": "hi"})
    # When Meta delivers it again
    writes, starts, counts = auto_reply.turn_starts(ctx, [_message()])
    # Then it is not put back among the unanswered, and no turn is scheduled
    assert (writes, starts, dict(counts)) == ([], [], {"already_started": 1})


def test_a_message_time_far_ahead_of_ours_is_stamped_at_ours():
    ctx = _ctx()
    writes, _, counts = auto_reply.turn_starts(ctx, [_message(timestamp=int(time.time()) + 86_400)])
    assert writes[0].values[":seq"] == ctx.now
    assert counts["clock_ahead"] == 1


def test_media_is_left_to_people_unless_the_tenant_answers_it():
    image = _message("image", "the red one?")
    assert auto_reply.turn_starts(_ctx(), [image])[1:] == ([], {"left": 1})
    writes, [_], _ = auto_reply.turn_starts(_ctx(media=ANSWER), [image])
    assert [w.item["text"] for w in writes if hasattr(w, "item")] == ["[image] the red one?"]


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


def test_a_delivery_with_two_customers_stamps_two_conversations_each_with_its_own_turn():
    # Given one delivery batching two customers' texts (Meta batches a number's messages)
    other = "16505559876"
    now = int(time.time())
    delivery = [
        _message(id="wamid.A1", text="hi", timestamp=now - 1),
        _message(id="wamid.B1", text="hello", sender=other, timestamp=now - 1),
        _message(id="wamid.A2", text="open today?", timestamp=now),
    ]
    writes, starts, counts = auto_reply.turn_starts(_ctx(), delivery)
    # Then each conversation has one marker on its newest message and one turn, to its own customer
    turns = {start.envelope.payload["conversation"]: start.envelope.payload["token"] for start in starts}
    assert turns == {CUSTOMER: "wamid.A2", other: "wamid.B1"}
    markers = {w.key["pk"]: w.values[":token"] for w in writes if w.table is Table.STATE}
    assert markers == {
        marker_key(LOCAL_SHOP, CUSTOMER)["pk"]: "wamid.A2",
        marker_key(LOCAL_SHOP, other)["pk"]: "wamid.B1",
    }
    assert {start.envelope.payload["reply_to"]["recipient"] for start in starts} == {CUSTOMER, other}
    assert dict(counts) == {"started": 3}
