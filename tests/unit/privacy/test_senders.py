"""Who a piece of work is about, on its own: one normalisation for every spelling of an id, and
the people a Meta delivery or a job names."""

from __future__ import annotations

import pytest

from pipeline.domain import senders
from tests.unit.tasks.payloads import comment_change, feed, status, text_message, whatsapp

KEY = b"k" * 32


@pytest.mark.parametrize(
    "spelling", ["15551234567", "+1 555 123 4567", "+1 (555) 123-4567", "001 555 123 4567", " 1-555-123-4567 "]
)
def test_every_usual_spelling_of_a_phone_number_has_the_hash_of_its_wa_id(spelling):
    assert senders.normalise(spelling) == "15551234567"
    assert senders.sender_hash(KEY, spelling) == senders.sender_hash(KEY, "15551234567")


def test_normalising_twice_changes_nothing_and_ids_that_are_not_numbers_stay_as_they_are():
    for value in ("0015551234567", "00012345", "+44 20 7946 0000", "2468013579", "user.name"):
        once = senders.normalise(value)
        assert senders.normalise(once) == once
    assert senders.normalise(" user.name ") == "user.name"


def test_the_hash_depends_on_the_key_is_short_and_names_nobody():
    digest = senders.sender_hash(KEY, "15551234567")
    assert senders.is_hash(digest)
    assert len(digest) == senders.HASH_HEX_DIGITS
    assert digest != senders.sender_hash(b"x" * 32, "15551234567")
    with pytest.raises(ValueError, match="empty sender id"):
        senders.sender_hash(KEY, "  ")


def test_a_delivery_names_its_senders_contacts_recipients_and_authors_never_the_business():
    delivery = whatsapp(
        messages=[text_message("wamid.1", sender="15550001"), text_message("wamid.2", sender="15550002")],
        statuses=[status("wamid.0", "read")],  # recipient 15550001
    )
    delivery["entry"][0]["changes"][0]["value"]["contacts"] = [{"wa_id": "15550003", "profile": {"name": "Ana"}}]
    comments = feed(comment_change("c-1", "nice"))  # from user-9
    messenger = {
        "object": "page",
        "entry": [
            {
                "id": "998877",
                "messaging": [
                    {"sender": {"id": "2468"}, "recipient": {"id": "998877"}, "message": {"mid": "m"}},
                    {"sender": {"id": "998877"}, "recipient": {"id": "1357"}, "message": {"mid": "echo"}},
                ],
            }
        ],
    }

    assert senders.people_in_delivery(delivery) == {"15550001", "15550002", "15550003"}
    assert senders.people_in_delivery(comments) == {"user-9"}
    assert senders.people_in_delivery(messenger) == {"2468", "1357"}
    assert senders.people_in_delivery({"entry": "nope"}) == frozenset()
    assert senders.people_in_delivery(None) == frozenset()


def test_a_whatsapp_business_app_echo_names_the_customer_it_went_to():
    # Given a person's message to a customer from the WhatsApp Business app, as Meta echoes it
    echo = {
        "object": "whatsapp_business_account",
        "entry": [
            {
                "id": "1000001",
                "changes": [
                    {
                        "field": "smb_message_echoes",
                        "value": {
                            "messaging_product": "whatsapp",
                            "metadata": {"display_phone_number": "15550783881", "phone_number_id": "1098765"},
                            "message_echoes": [
                                {"from": "15550783881", "to": "16505551234", "id": "wamid.E", "type": "text"}
                            ],
                        },
                    }
                ],
            }
        ],
    }
    # Then the customer is who its row names, so their erasure finds the raw delivery
    assert senders.people_in_delivery(echo) == {"16505551234"}


def test_a_job_names_its_person_by_sender_then_author_then_conversation():
    assert senders.person_in_job({"sender": "+1 555 000 1111", "conversation": "c-9"}) == "15550001111"
    assert senders.person_in_job({"comment_id": "c", "from": {"id": "1357"}}) == "1357"
    assert senders.person_in_job({"conversation": "15550002"}) == "15550002"
    assert senders.person_in_job({"import_id": "i", "rows": []}) is None
    assert senders.person_in_job(["not", "a", "mapping"]) is None


def test_a_username_only_delivery_names_its_customer_by_bsuid_and_one_with_both_ids_names_both():
    from tests.unit.tasks.username_payloads import BSUID, PHONE, status_to_bsuid, username_only, with_phone

    # Given deliveries of Meta's username rollout (no phone number, or both ids)
    # Then the row of each is indexed by every id an erasure may be asked for, never the parent BSUID
    assert senders.people_in_delivery(username_only("wamid.U")) == {BSUID}
    assert senders.people_in_delivery(status_to_bsuid("wamid.S", "read")) == {BSUID}
    assert senders.people_in_delivery(with_phone("wamid.P")) == {PHONE, BSUID}


@pytest.mark.parametrize("bsuid", ["US.13491208655302741918", "BR.1502576394655843", "US.ENT.11815799212886844830"])
def test_a_business_scoped_user_id_is_an_id_an_erasure_may_name_kept_as_meta_spells_it(bsuid):
    assert senders.usable_id(f" {bsuid} ") == bsuid
    assert senders.sender_hash(KEY, bsuid) != senders.sender_hash(KEY, bsuid.lower())


@pytest.mark.parametrize("wrong", ["us.13491208655302741918", "USA.1349", "US.", "US-1349", "@sheena.bakes"])
def test_what_only_looks_like_a_bsuid_or_is_a_username_is_refused_saying_what_to_give(wrong):
    with pytest.raises(senders.UnusableId, match="business-scoped user id"):
        senders.usable_id(wrong)
