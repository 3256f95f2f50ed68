"""Replies to a WhatsApp customer without a phone number (a username): addressed by their
business-scoped user id (BSUID) in the Cloud API's `recipient`, never `to`; a malformed one is
`reply_to_malformed`, refused before anything is sent, and never retried."""

from __future__ import annotations

import pytest

from pipeline.domain.dependencies import meta_send as ms
from pipeline.domain.reply_to import REPLY_TO_MALFORMED, ReplyTo, ReplyToRefused
from tests.unit.tasks.payloads import FakeVendor
from tests.unit.tasks.test_replies import PHONE_ID, _drain, _message, _reply, ai_lane  # noqa: F401
from tests.unit.tasks.username_payloads import BSUID, PARENT_BSUID

TO_BSUID = {"channel": "whatsapp", "business_id": PHONE_ID, "recipient": BSUID}


@pytest.mark.parametrize("bsuid", [BSUID, PARENT_BSUID, "BR.1502576394655843"])
def test_a_well_formed_bsuid_is_a_whatsapp_recipient_and_the_send_names_it_in_recipient(bsuid):
    reply_to = ReplyTo.parse({**TO_BSUID, "recipient": bsuid})
    body = ms.whatsapp_text(reply_to, "We open at 10.", "cb")
    assert (body["recipient"], "to" in body) == (bsuid, False)
    assert ms.whatsapp_text(ReplyTo.parse({**TO_BSUID, "recipient": "15551230001"}), "x", "cb")["to"] == "15551230001"


@pytest.mark.parametrize(
    "wrong",
    [
        "us.13491208655302741918",  # the country code in lower case
        "GB.",  # cut short
        "US.1349 1208",  # a space
        "USA.13491208655302741918",  # three letters
        "US." + "1" * 129,  # longer than Meta's 128
        "sheena.bakes",  # a username is not an address
    ],
)
def test_a_malformed_bsuid_is_refused_as_reply_to_malformed_saying_what_is_taken(wrong):
    with pytest.raises(ReplyToRefused) as refused:
        ReplyTo.parse({**TO_BSUID, "recipient": wrong})
    assert refused.value.reason == REPLY_TO_MALFORMED
    assert "business-scoped user id" in str(refused.value)
    assert wrong not in str(refused.value)


def test_a_turn_for_a_username_only_customer_is_answered_once_by_bsuid(ai_lane, graph):  # noqa: F811
    # Given an ai.inbound turn whose reply goes to the customer's BSUID
    _message(ai_lane, reply_to=TO_BSUID, conversation=BSUID)
    # When the lane runs it
    _drain(ai_lane, ai_lane.handler(vendor=FakeVendor(answers=["We open at 10."])))
    # Then Meta took one message addressed to the BSUID (the fake refuses a BSUID in `to`)
    [sent] = graph.outbox()
    assert (sent.channel, sent.recipient, sent.text) == ("whatsapp", BSUID, "We open at 10.")
    reply = _reply(ai_lane, conversation=BSUID)
    assert (reply["send_state"], reply["message_id"], reply["send_attempts"]) == (ms.SENT, sent.message_id, 1)


def test_a_turn_with_a_malformed_bsuid_is_dead_lettered_and_nothing_is_sent(ai_lane, graph):  # noqa: F811
    _message(ai_lane, reply_to={**TO_BSUID, "recipient": "us.13491208655302741918"})
    _drain(ai_lane, ai_lane.handler(vendor=FakeVendor()))
    [dead] = ai_lane.dead_letters()
    assert dead["MessageAttributes"]["reason"]["StringValue"] == REPLY_TO_MALFORMED
    assert graph.outbox() == []
