"""`lanectl erase` for on-call: the same erasure as Meta's callback, asked for by a person's id,
which never leaves the operator's process; the code it prints reads the result."""

from __future__ import annotations

import json
import re

import pytest

from pipeline import schema
from pipeline.domain import senders
from pipeline.domain.erasure import requests as erasure
from tests.support.aws import SENDER_KEY
from tests.unit.tasks.payloads import text_message, whatsapp

ANA = "15550001"


def test_on_call_erases_a_person_by_their_number_and_reads_the_result_by_code(pipeline, stack, lanectl):
    # Given Ana's message was stored
    pipeline.deliver(whatsapp(messages=[text_message("wamid.1", "hello", sender=ANA)]))
    pipeline.drain()

    # When on-call erases her by her number, as she spelled it in her email
    code, out, _ = lanectl("erase", "--env", "dev", "--sender", "+1 555 0001", "--wait", "0")

    # Then a confirmation code is printed, the erasure is pending, and her number appears nowhere
    assert code == 0
    confirmation = re.search(r"confirmation code ([0-9a-f]{32})", out).group(1)
    assert "status: pending" in out
    assert ANA not in out
    assert "555 0001" not in out
    # and the job written names her by hash only
    [row] = [r for r in pipeline.items("jobs") if r["kind"]["S"] == erasure.KIND]
    assert row["payload"]["M"]["sender_hash"]["S"] == senders.sender_hash(SENDER_KEY.encode(), ANA)
    assert row["payload"]["M"]["requested_by"]["S"] == erasure.OPERATOR

    # When its lane runs it, the code reads the result
    pipeline.drain()
    code, out, _ = lanectl("erase", "--env", "dev", "--status", confirmation)
    assert code == 0
    assert "\nstatus: done (requested " in "\n" + out
    assert "\nerased: body parts 0, items 1, jobs 0, markers 0, webhook rows 1\n" in "\n" + out
    assert not [i for i in pipeline.items("data") if schema.SENDER_HASH in i]


@pytest.mark.parametrize(
    ("argv", "expected", "message"),
    [
        (("--sender", "  "), 2, "give the person as --sender"),
        (("--sender", "ana@example.com"), 2, "--sender: not an id the pipeline stores"),
        (("--sender", "07700 900123"), 2, "--sender: a national phone number (starting 0) matches nobody"),
        (("--sender", "1234"), 2, "--sender: too short"),
        (("--app-scoped-id", "10223344556677"), 2, "no ids are linked to this app-scoped id"),
        (("--link", "10223344556677"), 2, "--link needs at least one --to"),
        (("--sender", ANA, "--to", "15550002"), 2, "--to goes with --link"),
        (("--sender-hash", "ABC"), 2, "--sender-hash must be 32 lowercase hex digits"),
        (("--status", "not-a-code"), 2, "a confirmation code is 32 lowercase hex digits"),
        (("--status", "0" * 32), 1, "no erasure has the code"),
    ],
    ids=[
        "blank-sender",
        "email",
        "national-number",
        "too-short",
        "unlinked-app-scoped-id",
        "link-to-nothing",
        "to-without-link",
        "bad-hash",
        "bad-code",
        "unknown-code",
    ],
)
def test_bad_input_is_refused_with_what_to_give_instead(pipeline, stack, lanectl, argv, expected, message):
    code, _, err = lanectl("erase", "--env", "dev", *argv)

    assert code == expected
    assert message in err
    assert [r for r in pipeline.items("jobs") if r["kind"]["S"] == erasure.KIND] == []


def test_an_app_scoped_id_linked_to_a_number_erases_what_is_stored_under_the_number(pipeline, stack, lanectl):
    # Given Ana's WhatsApp message was stored, and the product linked her app-scoped id to her number
    pipeline.deliver(whatsapp(messages=[text_message("wamid.1", "hello", sender=ANA)]))
    pipeline.drain()
    assert lanectl("erase", "--env", "dev", "--link", "10223344556677", "--to", "+1 555 0001")[:2] == (
        0,
        "linked 1 ids to the app-scoped id\n",
    )

    # When on-call erases her by the app-scoped id
    code, out, _ = lanectl("erase", "--env", "dev", "--app-scoped-id", "10223344556677", "--wait", "0")

    # Then it says what it takes, and once run, her message is gone
    assert code == 0
    assert "erasing the id asked for and 1 linked to it" in out
    confirmation = re.search(r"confirmation code ([0-9a-f]{32})", out).group(1)
    pipeline.drain()
    _, out, _ = lanectl("erase", "--env", "dev", "--status", confirmation)
    assert "\nerased: body parts 0, items 1, jobs 0, markers 0, webhook rows 1\n" in "\n" + out
    assert not [i for i in pipeline.items("data") if "hello" in json.dumps(i)]
