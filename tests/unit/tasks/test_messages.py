"""messages lane: inbound messages stored once, statuses applied newest-wins whatever the order."""

from __future__ import annotations

import json

import boto3
import pytest

from bench.consumer_costs import item_size
from bench.scenarios.message_text import varied_text
from pipeline import metric_names, schema
from pipeline.domain import stored_text
from pipeline.domain.effects import Put, Update
from pipeline.domain.errors import PermanentError
from pipeline.tasks import messages, meta
from tests.support.aws import REGION
from tests.unit.consumer.handler_output import metric_total, stdout_records
from tests.unit.tasks.payloads import (
    FAKE_KEY,
    PAGE,
    WABA,
    FakeContext,
    comment_at,
    comment_change,
    envelope,
    feed,
    message_at,
    messenger_message,
    person,
    status,
    status_at,
    text_message,
    whatsapp,
)

REAL_WABA = "106540352242922"
REAL_WAMID = "wamid.HBgLMTY1MDM4Nzk0MzkVAgASGBQzQTM0OEI2ODg4NEQ1MDJCMUE2MgA"
"""A WhatsApp Business Account id and a message id as long as Meta's."""


def _run(h, *payloads, inline: bool = False):
    handler = h.handler()
    for payload in payloads:
        h.send(h.webhook_row(payload, tenant=WABA, inline=inline))
        response, _ = h.poll(handler)
        assert response == {"batchItemFailures": []}


def _status(h, wamid: str):
    return h.data(*status_at(wamid))


def test_a_message_in_two_different_deliveries_is_stored_once(lane):
    # Given Meta delivering one message twice, batched differently (so two log rows)
    h = lane("messages")
    first = whatsapp(messages=[text_message("wamid.A", "hello")])
    second = whatsapp(messages=[text_message("wamid.A", "hello"), text_message("wamid.B", "again")])
    # When both are consumed
    _run(h, first, second)
    # Then each message exists once, and the first copy was not overwritten
    stored = h.data(*message_at("wamid.A"))
    assert stored["text"] == "hello"
    assert h.data(*message_at("wamid.B"))["text"] == "again"
    assert [i["sk"] for i in h.data_items(person())] == [f"msg#{WABA}#wamid.A", f"msg#{WABA}#wamid.B"]


def test_statuses_arriving_out_of_order_never_move_a_message_backwards(lane):
    # Given read arriving before delivered, then sent arriving last
    h = lane("messages")
    _run(
        h,
        whatsapp(statuses=[status("wamid.S", "read", ts=30)]),
        whatsapp(statuses=[status("wamid.S", "delivered", ts=20)]),
        whatsapp(statuses=[status("wamid.S", "sent", ts=10)]),
    )
    # Then the message stays read
    item = _status(h, "wamid.S")
    assert (item["status"], item["status_at"]) == ("read", 30)


def test_a_stale_status_does_not_hold_back_the_rest_of_its_delivery(lane, caplog):
    # Given a message already read, and a delivery with its stale "delivered" plus a new message
    h = lane("messages")
    _run(h, whatsapp(statuses=[status("wamid.S", "read")]))
    mixed = whatsapp(messages=[text_message("wamid.NEW", "new one")], statuses=[status("wamid.S", "delivered")])
    # When it is consumed
    _run(h, mixed)
    # Then the new message is stored, the status stays read, and the stale write was skipped
    assert h.data(*message_at("wamid.NEW")) is not None
    assert _status(h, "wamid.S")["status"] == "read"
    done = [r for r in caplog.records if getattr(r, "outcome", None) == "done"]
    assert done[-1].detail["skipped_writes"] == 1


def test_a_large_body_travels_by_reference_and_is_read_from_the_log_row(lane):
    # Given a delivery big enough that the ingress gzips it, sent by reference
    h = lane("messages")
    many = whatsapp(messages=[text_message(f"wamid.{n}", "x" * 200) for n in range(20)])
    _run(h, many)
    assert h.data(*message_at("wamid.19"))["text"] == "x" * 200


def test_a_delivery_larger_than_one_transaction_still_commits_whole(lane):
    h = lane("messages")
    _run(h, whatsapp(statuses=[status(f"wamid.{n}", "delivered") for n in range(150)]))
    assert _status(h, "wamid.0")["status"] == "delivered"
    assert _status(h, "wamid.149")["status"] == "delivered"


def test_comments_sharing_a_delivery_with_messages_are_kept_for_triage(lane):
    h = lane("messages")
    payload = whatsapp(messages=[text_message("wamid.M")])
    payload["entry"][0]["changes"].append(comment_change("c-1", "nice"))
    _run(h, payload)
    assert h.data(*comment_at("c-1", tenant=WABA))["label"] == "untriaged"


def test_a_payload_that_is_not_a_delivery_is_dead_lettered(lane):
    h = lane("messages")
    h.send(h.webhook_row({"hello": "world"}, tenant=WABA, inline=True))
    response, _ = h.poll(h.handler())
    assert response == {"batchItemFailures": []}
    assert h.dead_letters()[0]["MessageAttributes"]["reason"]["StringValue"] == "not_a_delivery"


def test_the_task_writes_one_item_per_message_and_keeps_the_highest_status():
    # Given one delivery repeating a message and carrying three statuses of another
    payload = whatsapp(
        messages=[text_message("wamid.A"), text_message("wamid.A")],
        statuses=[
            status("wamid.S", "delivered"),
            status("wamid.S", "read"),
            status("wamid.S", "sent"),
            status("wamid.S", "deleted"),
            {"id": "", "status": "read"},
        ],
    )
    ctx = FakeContext(envelope("messages", "whatsapp.messages", tenant=WABA), payload)
    # When the task runs
    result = messages.run(ctx)
    # Then there is one write per item (a transaction allows no more), the status write is "read",
    # and what it could not use is counted
    puts = [w for w in result.writes if isinstance(w, Put)]
    updates = [w for w in result.writes if isinstance(w, Update)]
    assert [(p.item[schema.PK], p.item[schema.SK]) for p in puts] == [message_at("wamid.A", key=FAKE_KEY)]
    assert [u.values[":status"] for u in updates] == ["read"]
    assert result.detail["ignored"] == {"status.no_id": 1, "status.deleted": 1}
    assert all(w.standalone for w in result.writes)


def test_messenger_messages_are_stored_by_their_mid():
    payload = {
        "object": "instagram",
        "entry": [
            {
                "id": "ig-1",
                "messaging": [
                    {
                        "sender": {"id": "u1"},
                        "recipient": {"id": "ig-1"},
                        "timestamp": 1_700_000_000_000,
                        "message": {"mid": "mid.1", "text": "hey"},
                    },
                    {
                        "sender": {"id": "u1"},
                        "recipient": {"id": "ig-1"},
                        "timestamp": 1_700_000_000_001,
                        "read": {"mid": "m"},
                    },
                ],
            }
        ],
    }
    result = messages.run(FakeContext(envelope("messages", "instagram.messaging", tenant="ig-1"), payload))
    [put] = result.writes
    assert put.item["channel"] == "instagram"
    assert put.item["sent_at"] == 1_700_000_000
    assert result.detail["ignored"] == {"messaging.read": 1}


def test_a_payload_without_entries_is_permanent():
    with pytest.raises(PermanentError):
        messages.run(FakeContext(envelope("messages", "x"), {"entry": "nope"}))


def test_a_2_kb_whatsapp_texts_message_item_fits_one_write_unit_and_reads_back(lane):
    # Given 2 KB WhatsApp texts of varied words (the cost scenario's), with Meta-length ids
    h = lane("messages")
    empty = len(json.dumps(whatsapp(messages=[text_message(REAL_WAMID, "")], waba=REAL_WABA)))
    texts = {f"{REAL_WAMID}{seed:02d}": varied_text(seed, 2048 - empty) for seed in range(30)}
    payloads = [whatsapp(messages=[text_message(wamid, text)], waba=REAL_WABA) for wamid, text in texts.items()]
    assert all(2040 <= len(json.dumps(p)) <= 2050 for p in payloads)
    # When each is consumed
    for payload in payloads:
        h.send(h.webhook_row(payload, tenant=REAL_WABA, inline=True))
    handler = h.handler()
    while h.depth():
        assert h.poll(handler)[0] == {"batchItemFailures": []}
    # Then each message item, key, hash partition and expiry included, is at most 1 KB, and its
    # text reads back as it was sent
    client = boto3.client("dynamodb", region_name=REGION)
    for wamid, text in texts.items():
        pk, sk = message_at(wamid, tenant=REAL_WABA)
        raw = client.get_item(TableName="data", Key={"pk": {"S": pk}, "sk": {"S": sk}})["Item"]
        assert item_size(raw) <= 1024, (wamid, item_size(raw))
        assert stored_text.read(raw["text"]["B"]) == text


def test_a_short_text_is_stored_as_it_was_sent(lane):
    h = lane("messages")
    _run(h, whatsapp(messages=[text_message("wamid.short", "see you at 5 🙂")]))
    assert h.data(*message_at("wamid.short"))["text"] == "see you at 5 🙂"


LONE_SURROGATE = "\ud83d"
"""Half of an emoji's UTF-16 pair: JSON allows the escape, UTF-8 has no encoding for it."""


def test_a_lone_surrogate_in_one_text_is_stored_as_a_replacement_character_and_loses_nothing(lane, caplog):
    # Given a delivery whose second message's text ends in half an emoji, beside good units
    h = lane("messages")
    payload = whatsapp(
        messages=[
            text_message("wamid.GOOD", "hello"),
            text_message("wamid.HALF", "see you " + LONE_SURROGATE),
            text_message("wamid.LONG", "long " * 80 + LONE_SURROGATE + "\ud83d\ude00"),
        ],
        statuses=[status("wamid.SENT", "read")],
    )
    # When it is consumed (by reference, as the door sends what SQS cannot carry)
    _run(h, payload)
    # Then nothing is dead-lettered and every unit is stored, the half emoji as U+FFFD, a whole pair kept
    assert h.dead_letters() == []
    assert h.data(*message_at("wamid.GOOD"))["text"] == "hello"
    assert h.data(*message_at("wamid.HALF"))["text"] == "see you \ufffd"
    assert stored_text.read(h.data(*message_at("wamid.LONG"))["text"].value) == "long " * 80 + "\ufffd\U0001f600"
    assert _status(h, "wamid.SENT")["status"] == "read"


def test_a_unit_that_cannot_be_stored_is_skipped_and_counted_never_its_delivery(lane, caplog, capsys):
    # Given a delivery where one message's id and one status's recipient carry a lone surrogate
    h = lane("messages")
    broken_status = {**status("wamid.OTHER", "read"), "recipient_id": "1555" + LONE_SURROGATE}
    payload = whatsapp(
        messages=[text_message("wamid.GOOD", "hello"), text_message("wamid." + LONE_SURROGATE, "lost")],
        statuses=[status("wamid.SENT", "read"), broken_status],
    )
    # When it is consumed (by reference, as the door sends what SQS cannot carry)
    _run(h, payload)
    # Then the good units are stored, the two bad ones skipped, and the skip is on the record's
    # line and in a metric by lane
    assert h.dead_letters() == []
    assert h.data(*message_at("wamid.GOOD"))["text"] == "hello"
    assert _status(h, "wamid.SENT")["status"] == "read"
    done = [r for r in caplog.records if getattr(r, "outcome", None) == "done"]
    assert done[-1].detail["unprocessable"] == 2
    assert LONE_SURROGATE not in json.dumps(done[-1].detail, ensure_ascii=False)
    printed = stdout_records(capsys.readouterr().out)
    assert metric_total(printed, metric_names.UNPROCESSABLE_UNITS, Lane="messages") == 2


def test_an_echo_is_stored_as_the_businesss_outgoing_message_in_the_customers_partition():
    # Given Meta's echo of a message the Page sent to a customer (sender: the Page)
    payload = messenger_message("psid-77", "mid.echo-1", "your order ships today", echo=True)

    [put] = messages.run(FakeContext(envelope("messages", "page.messaging", tenant=PAGE), payload)).writes

    # Then it is the Page's outgoing message, kept in the customer's partition (their erasure finds it)
    assert put.item[schema.PK] == person("psid-77", key=FAKE_KEY)
    assert (put.item["direction"], put.item["sender"], put.item["recipient"]) == ("outgoing", PAGE, "psid-77")
    assert put.item["text"] == "your order ships today"


def test_an_inbound_message_stays_as_it_was_stored():
    payload = messenger_message("psid-77", "mid.in-1", "when do you ship?")

    [put] = messages.run(FakeContext(envelope("messages", "page.messaging", tenant=PAGE), payload)).writes

    assert put.item[schema.PK] == person("psid-77", key=FAKE_KEY)
    assert "direction" not in put.item  # inbound is the usual case, and every byte is paid for
    assert put.item["sender"] == "psid-77"


def test_everything_the_pipeline_does_not_act_on_is_counted_by_name():
    # Given a WhatsApp delivery with a voice note's `played` status, and a Page delivery with a
    # `mention` change, a read receipt and a reaction
    played = whatsapp(statuses=[status("wamid.v1", "played"), status("wamid.v2", "read")])
    page = feed({"field": "mention", "value": {"post_id": "p-1", "item": "post"}})
    page["entry"][0]["messaging"] = [
        {"sender": {"id": "psid-1"}, "recipient": {"id": PAGE}, "timestamp": 1, "read": {"watermark": 1}},
        {"sender": {"id": "psid-1"}, "recipient": {"id": PAGE}, "timestamp": 2, "reaction": {"mid": "m"}},
    ]

    by_whatsapp = messages.run(FakeContext(envelope("messages", "whatsapp.messages"), played)).detail["ignored"]
    by_page = messages.run(FakeContext(envelope("messages", "page.feed"), page)).detail["ignored"]

    assert by_whatsapp == {"status.played": 1}
    assert by_page == {"field.mention": 1, "messaging.read": 1, "messaging.reaction": 1}


@pytest.mark.parametrize(
    ("stamped", "seconds"),
    [(1_700_000_000_123, 1_700_000_000), (1_700_000_000, 1_700_000_000), ("1700000000", 1_700_000_000), ("", 0)],
)
def test_a_messenger_time_is_read_in_seconds_whichever_unit_it_came_in(stamped, seconds):
    # Given a Messenger message stamped in milliseconds (Meta's usual), in seconds, or not at all
    event = {"sender": {"id": "u1"}, "recipient": {"id": "page-1"}, "timestamp": stamped, "message": {"mid": "m.1"}}
    payload = {"object": "page", "entry": [{"id": "page-1", "messaging": [event]}]}
    # When the delivery is read
    [message] = meta.read(payload).messages
    # Then its time is epoch seconds (0 for none), never a 1970 or a year-55,000 one
    assert message.timestamp == seconds


def test_whatsapps_times_are_read_in_seconds_whichever_unit_they_came_in():
    value = {
        "messages": [{"id": "wamid.A", "from": "15551230001", "timestamp": "1700000000123", "type": "text"}],
        "statuses": [{"id": "wamid.B", "status": "read", "timestamp": "1700000005", "recipient_id": "15551230001"}],
    }
    payload = {
        "object": "whatsapp_business_account",
        "entry": [{"id": "waba", "changes": [{"field": "messages", "value": value}]}],
    }
    units = meta.read(payload)
    assert [m.timestamp for m in units.messages] == [1_700_000_000]
    assert [s.timestamp for s in units.statuses] == [1_700_000_005]
