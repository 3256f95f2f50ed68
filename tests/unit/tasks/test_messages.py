"""messages lane: inbound messages stored once, statuses applied newest-wins whatever the order."""

from __future__ import annotations

import pytest

from pipeline import schema
from pipeline.domain.effects import Put, Update
from pipeline.domain.errors import PermanentError
from pipeline.tasks import messages
from tests.unit.tasks.payloads import (
    WABA,
    FakeContext,
    comment_change,
    envelope,
    status,
    text_message,
    whatsapp,
)


def _run(h, *payloads, inline: bool = False):
    handler = h.handler()
    for payload in payloads:
        h.send(h.webhook_row(payload, tenant=WABA, inline=inline))
        response, _ = h.poll(handler)
        assert response == {"batchItemFailures": []}


def _status(h, wamid: str):
    return h.data(f"msg#{WABA}#{wamid}", "status")


def test_a_message_in_two_different_deliveries_is_stored_once(lane):
    # Given Meta delivering one message twice, batched differently (so two log rows)
    h = lane("messages")
    first = whatsapp(messages=[text_message("wamid.A", "hello")])
    second = whatsapp(messages=[text_message("wamid.A", "hello"), text_message("wamid.B", "again")])
    # When both are consumed
    _run(h, first, second)
    # Then each message exists once, and the first copy was not overwritten
    stored = h.data(f"msg#{WABA}#wamid.A", "message")
    assert stored["text"] == "hello"
    assert h.data(f"msg#{WABA}#wamid.B", "message")["text"] == "again"
    assert len(h.data_items(f"msg#{WABA}#wamid.A")) == 1


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
    assert h.data(f"msg#{WABA}#wamid.NEW", "message") is not None
    assert _status(h, "wamid.S")["status"] == "read"
    done = [r for r in caplog.records if getattr(r, "outcome", None) == "done"]
    assert done[-1].detail["skipped_writes"] == 1


def test_a_large_body_travels_by_reference_and_is_read_from_the_log_row(lane):
    # Given a delivery big enough that the ingress gzips it, sent by reference
    h = lane("messages")
    many = whatsapp(messages=[text_message(f"wamid.{n}", "x" * 200) for n in range(20)])
    _run(h, many)
    assert h.data(f"msg#{WABA}#wamid.19", "message")["text"] == "x" * 200


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
    assert h.data(f"comment#{WABA}#c-1", "triage")["label"] == "untriaged"


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
    assert [p.item[schema.PK] for p in puts] == [f"msg#{WABA}#wamid.A"]
    assert [u.values[":status"] for u in updates] == ["read"]
    assert result.detail["ignored"] == 2
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
    assert result.detail["ignored"] == 1


def test_a_payload_without_entries_is_permanent():
    with pytest.raises(PermanentError):
        messages.run(FakeContext(envelope("messages", "x"), {"entry": "nope"}))
