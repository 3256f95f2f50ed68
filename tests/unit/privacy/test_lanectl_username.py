"""`lanectl trace` and `lanectl erase` for a WhatsApp customer known only by their business-scoped
user id (BSUID, a username hides their number): traced like anyone, their BSUID and username shown
only when asked; erased by their BSUID, or by their number once Meta sent both."""

from __future__ import annotations

import re

from pipeline.domain import senders
from pipeline.domain.erasure import requests as erasure
from pipeline.domain.webhook import delivery as webhook
from tests.support.aws import SENDER_KEY
from tests.unit.ingress.conftest import encode
from tests.unit.tasks.username_payloads import BSUID, PHONE, USERNAME, username_only, with_phone


def test_a_username_only_customers_delivery_is_traced_to_its_stored_message_naming_nobody(pipeline, stack, lanectl):
    # Given a username-only customer's message, processed
    payload = username_only("wamid.u1", "is the shop open on Sunday?")
    pipeline.deliver(payload)
    pipeline.drain()
    row_id = webhook.log_id(encode(payload))

    # When on-call traces its delivery
    code, out, _ = lanectl("trace", row_id, "--env", "dev")

    # Then its message was found where it was stored, and neither the BSUID nor the username shows
    assert code == 0, out
    assert "  status       processed: 1 of 1 unit(s) stored" in out
    assert (BSUID not in out, USERNAME not in out, "Sunday" not in out) == (True, True, True)

    # and with --show-personal the person is the BSUID, with their username
    code, out, _ = lanectl("trace", row_id, "--env", "dev", "--show-personal")
    assert f"  message      wamid.u1 from {BSUID}: stored " in out
    assert f"'username': '{USERNAME}'" in out


def test_on_call_erases_a_customer_by_bsuid_and_what_was_stored_under_their_number_goes_too(pipeline, stack, lanectl):
    # Given a customer seen with both ids, then username-only
    pipeline.deliver(with_phone("wamid.p1", "hello"))
    pipeline.deliver(username_only("wamid.u2", "it's me again"))
    pipeline.drain()

    # When on-call erases them by BSUID
    code, out, _ = lanectl("erase", "--env", "dev", "--sender", BSUID, "--wait", "0")

    # Then the job names the BSUID's hash, and the id appears nowhere in what was printed
    assert code == 0, out
    assert BSUID not in out
    [row] = [r for r in pipeline.items("jobs") if r["kind"]["S"] == erasure.KIND]
    assert row["payload"]["M"]["sender_hash"]["S"] == senders.sender_hash(SENDER_KEY.encode(), BSUID)
    confirmation = re.search(r"confirmation code ([0-9a-f]{32})", out).group(1)
    pipeline.drain()
    _, out, _ = lanectl("erase", "--env", "dev", "--status", confirmation)
    assert "status: done" in out
    assert "items 2" in out
    assert "webhook rows 2" in out
    assert not [i for i in pipeline.items("data") if PHONE in str(i) or BSUID in str(i)]
