"""messages lane and WhatsApp usernames: a customer named by business-scoped user id (BSUID) when
Meta withholds their phone number, and by phone number, linked to the BSUID, when it does not
(tasks/messages.py). Real-shaped deliveries: tests/unit/tasks/username_payloads.py."""

from __future__ import annotations

import json

from pipeline import schema
from pipeline.domain import senders
from pipeline.tasks import meta
from tests.unit.consumer.handler_output import log_lines
from tests.unit.tasks.payloads import HARNESS_KEY, WABA, message_at, person, status_at
from tests.unit.tasks.username_payloads import (
    BSUID,
    PARENT_BSUID,
    PHONE,
    USERNAME,
    status_to_bsuid,
    username_only,
    with_phone,
)


def _run(h, *payloads):
    handler = h.handler()
    for payload in payloads:
        h.send(h.webhook_row(payload, tenant=WABA))
        response, _ = h.poll(handler)
        assert response == {"batchItemFailures": []}


def test_a_username_only_customers_message_is_stored_in_their_bsuids_partition(lane):
    # Given a customer who adopted a username: no `from`, no `wa_id`, only their BSUID
    h = lane("messages")
    # When their message is consumed
    _run(h, username_only("wamid.U1", "is the shop open on Sunday?"))
    # Then it is stored where an erasure by their BSUID finds it, with the ids Meta sent
    stored = h.data(*message_at("wamid.U1", sender=BSUID))
    assert stored is not None
    assert (stored["sender"], stored["text"]) == (BSUID, "is the shop open on Sunday?")
    assert (stored["user_id"], stored["parent_user_id"], stored["username"]) == (BSUID, PARENT_BSUID, USERNAME)
    # and under no legacy key that names no one
    assert h.data(f"msg#{WABA}#wamid.U1", "message") is None


def test_a_customer_with_both_ids_is_stored_under_the_number_and_carries_the_bsuids_hash(lane):
    # Given Meta sending both the phone number and the BSUID (every message since April 2026)
    h = lane("messages")
    _run(h, with_phone("wamid.P1", "hello"))
    # Then the message lives in the number's partition, and its index key is the BSUID's hash,
    # which is what links the two ids for an erasure by either
    stored = h.data(*message_at("wamid.P1", sender=PHONE))
    assert stored["user_id"] == BSUID
    assert stored[schema.SENDER_HASH] == senders.sender_hash(HARNESS_KEY, BSUID)
    assert [i["sk"] for i in h.data_items(person(BSUID)) if i["sk"].startswith("msg#")] == []


def test_a_status_of_a_reply_sent_to_a_bsuid_is_kept_in_the_bsuids_partition_with_the_username(lane):
    # Given statuses naming the recipient by BSUID only (sent to the BSUID, number withheld)
    h = lane("messages")
    _run(h, status_to_bsuid("wamid.OUT1", "sent"), status_to_bsuid("wamid.OUT1", "read", ts=1_700_000_200))
    # Then the status moved forward in the BSUID's partition, keeping the username the read status carried
    item = h.data(*status_at("wamid.OUT1", recipient=BSUID))
    assert (item["status"], item["recipient"], item["username"]) == ("read", BSUID, USERNAME)


def test_meta_ids_of_the_username_rollout_are_read_from_messages_contacts_and_statuses():
    # Given a delivery of each shape
    only = meta.read(username_only("wamid.U2")).messages[0]
    both = meta.read(with_phone("wamid.P2")).messages[0]
    status = meta.read(status_to_bsuid("wamid.OUT2", "delivered")).statuses[0]
    # Then each names its customer by phone when there is one, else by BSUID, with every id kept
    assert (only.person, only.ids) == (BSUID, meta.WhatsAppIds("", BSUID, PARENT_BSUID, USERNAME))
    assert (both.person, both.ids.linked_bsuid, both.ids.username) == (PHONE, BSUID, "")
    assert (status.recipient, status.ids.username) == (BSUID, USERNAME)


def test_no_line_the_lane_logs_carries_a_bsuid_or_a_username(lane, caplog, capsys):
    # Given deliveries naming a customer by BSUID, username and number
    h = lane("messages")
    _run(h, username_only("wamid.U3"), with_phone("wamid.P3"), status_to_bsuid("wamid.OUT3", "read"))
    # Then what the lane logged (its lines and its metric documents) says what it did, and names none of them
    lines = log_lines(caplog)
    assert [line["outcome"] for line in lines if line["message"] == "record done"] == ["done"] * 3
    printed = json.dumps(lines, default=str) + capsys.readouterr().out
    assert [needle for needle in (BSUID, PARENT_BSUID, USERNAME, PHONE) if needle in printed] == []


def test_a_username_json_spells_with_an_unpaired_surrogate_is_kept_well_formed_and_the_message_stored(lane):
    # Given a username no table would take as sent (JSON can spell a lone surrogate)
    h = lane("messages")
    delivery = username_only("wamid.U4", "hello")
    delivery["entry"][0]["changes"][0]["value"]["contacts"][0]["profile"]["username"] = "sheena\ud800"
    _run(h, delivery)
    # Then the message is stored, its username made well formed, as a text is
    stored = h.data(*message_at("wamid.U4", sender=BSUID))
    assert (stored["text"], stored["username"]) == ("hello", "sheena\ufffd")
