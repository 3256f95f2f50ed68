"""Erasing a WhatsApp customer known by phone number and by business-scoped user id (BSUID), on
moto through the real handlers: whichever id the erasure names, what was stored under the other is
erased too, once one delivery named both (tasks/messages.py links them; tasks/erase.py follows)."""

from __future__ import annotations

import json

import pytest

from tests.unit.tasks.payloads import text_message, whatsapp
from tests.unit.tasks.username_payloads import (
    BSUID,
    PARENT_BSUID,
    PHONE,
    USERNAME,
    status_to_bsuid,
    username_only,
    with_phone,
)

from .test_erasure import _mentions, _readable

BEN = "15550002"
SHEENA_SAYS = ("before BSUIDs existed", "my order number is 4417", "deliver it to the back door")


def _sheena_then_username_and_ben(pipeline) -> None:
    """Sheena writes before Meta sent BSUIDs (her number only), then with both ids, then adopts a
    username (number withheld) and is answered by BSUID; Ben writes too."""
    for payload in (
        whatsapp(messages=[text_message("wamid.s0", SHEENA_SAYS[0], sender=PHONE)]),
        with_phone("wamid.s1", SHEENA_SAYS[1]),
        username_only("wamid.s2", SHEENA_SAYS[2]),
        status_to_bsuid("wamid.out1", "read"),
        whatsapp(messages=[text_message("wamid.b1", "see you at 5", sender=BEN)]),
    ):
        assert pipeline.deliver(payload)["statusCode"] == 200
    pipeline.drain()


@pytest.mark.parametrize("named_by", [PHONE, BSUID], ids=["by_phone", "by_bsuid"])
def test_an_erasure_by_either_id_leaves_nothing_readable_stored_under_the_other(pipeline, named_by):
    # Given Sheena's items under her number and under her BSUID, and Ben's
    _sheena_then_username_and_ben(pipeline)
    sheena = (PHONE, BSUID, PARENT_BSUID, USERNAME, *SHEENA_SAYS)
    assert {table for table, _ in _mentions(_readable(pipeline), sheena)} >= {"webhook-log", "data"}

    # When Meta asks for her erasure naming one of her ids, and it runs
    code = json.loads(pipeline.forget(named_by)["body"])["confirmation_code"]
    pipeline.drain()

    # Then nothing readable of her is left under either id, and Ben is untouched
    after = _readable(pipeline)
    assert _mentions(after, sheena) == []
    shown = json.loads(pipeline.erasure_status(code)["body"])
    assert shown["status"] == "done"
    assert shown["erased"]["webhook_rows"] == 4
    assert {table for table, _ in _mentions(after, (BEN, "see you at 5"))} >= {"webhook-log", "data"}


def test_an_erasure_of_a_username_only_customer_never_seen_with_a_number_erases_their_bsuids_items(pipeline):
    # Given a customer only ever seen by BSUID
    assert pipeline.deliver(username_only("wamid.u1", "just the BSUID"))["statusCode"] == 200
    pipeline.drain()
    # When they are erased by it
    code = json.loads(pipeline.forget(BSUID)["body"])["confirmation_code"]
    pipeline.drain()
    # Then their message and delivery are gone
    assert _mentions(_readable(pipeline), (BSUID, USERNAME, "just the BSUID")) == []
    assert json.loads(pipeline.erasure_status(code)["body"])["erased"]["webhook_rows"] == 1
