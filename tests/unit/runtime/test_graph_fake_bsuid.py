"""The local Graph API takes a WhatsApp send addressed as Meta's Cloud API does since usernames: a
phone number in `to`, a business-scoped user id (BSUID) in `recipient`; anything else is Meta's
#100 and nothing is sent. Statuses of a send to a BSUID name the customer by it alone."""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request

import pytest

from local_aws.graph_fake import GraphFake

TOKEN = "token-1"
NUMBER = "1098765"
BSUID = "US.13491208655302741918"


@pytest.fixture
def graph():
    fake = GraphFake(token=TOKEN)
    delivered: list[dict] = []
    fake.deliver = delivered.append
    fake.delivered = delivered  # type: ignore[attr-defined]
    fake.configure(status_delay_ms=0)
    fake.start()
    yield fake
    fake.stop()


def _post(graph: GraphFake, addressee: dict) -> tuple[int, dict]:
    body = {"messaging_product": "whatsapp", "recipient_type": "individual", **addressee}
    body.update(type="text", text={"body": "hello"})
    request = urllib.request.Request(
        f"{graph.url}/{NUMBER}/messages",
        data=json.dumps(body).encode(),
        headers={"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(request, timeout=5) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def test_a_send_to_a_bsuid_in_recipient_is_taken_answered_with_its_user_id_and_its_status_names_it(graph):
    status, answer = _post(graph, {"recipient": BSUID})
    assert status == 200
    assert answer["contacts"] == [{"input": BSUID, "user_id": BSUID}]
    [sent] = graph.outbox()
    assert sent.recipient == BSUID
    for _ in range(50):
        if graph.delivered:  # type: ignore[attr-defined]
            break
        time.sleep(0.02)
    [delivery] = graph.delivered  # type: ignore[attr-defined]
    [status_item] = delivery["entry"][0]["changes"][0]["value"]["statuses"]
    assert (status_item["recipient_user_id"], "recipient_id" in status_item) == (BSUID, False)


@pytest.mark.parametrize(
    "addressee",
    [{"recipient": "us.13491208655302741918"}, {"recipient": 13491208655302741918}, {"to": BSUID}],
    ids=["lower_case_bsuid", "bsuid_as_number", "bsuid_in_to"],
)
def test_a_misaddressed_send_is_metas_invalid_parameter_and_nothing_is_sent(graph, addressee):
    status, answer = _post(graph, addressee)
    assert (status, answer["error"]["code"]) == (400, 100)
    assert graph.outbox() == []
