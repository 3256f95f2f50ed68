"""ai lane: a reply goes out only through a Meta asset its job's tenant owns (TENANT_ASSETS), and a
`reply_to` whose ids are not Meta's shapes never reaches a Graph URL, whatever path the work came by."""

from __future__ import annotations

import time

import pytest

from local_aws.graph_fake import GraphFake
from pipeline.tasks import ai, replies
from stacks.config.environments import LOCAL_ASSETS, LOCAL_SHOP
from tests.support.aws import META_ACCESS_TOKEN
from tests.unit.consumer.lane_env import with_lane
from tests.unit.tasks.payloads import FakeVendor

_RECENT = time.time() - 60
"""A customer message's time within the customer service window (24 h), as a live one is."""

SHOP_NUMBER = LOCAL_ASSETS.tenants[LOCAL_SHOP].phones[0]
ACME = "acme"
CUSTOMER = "15551230001"
SMUGGLED = "999/subscribed_apps?subscribed_fields=feed&x="
"""A business id that, put into the path as it is, makes the send `POST /v21.0/999/subscribed_apps?
subscribed_fields=feed&x=/messages`: a subscription change, with the pipeline's token."""


@pytest.fixture
def graph():
    fake = GraphFake(token=META_ACCESS_TOKEN)
    fake.add_account("999", "page", ("messages",))
    fake.start()
    yield fake
    fake.stop()


@pytest.fixture
def ai_lane(lane, graph):
    h = lane("ai")
    options = {"debounce_seconds": "0", "resolve_seconds": "0", "resolve_rounds": "2"}
    h.environ = {**with_lane(h.environ, options=options), "GRAPH_API_URL": graph.url}
    return h


def _post(h, tenant: str, kind: str, payload: dict, job_id: str) -> None:
    h.send(h.job_row(job_id, payload, tenant=tenant, kind=kind))


def _inbound(h, tenant: str, reply_to: dict | None, conversation: str = "conv-1") -> None:
    payload = {"conversation": conversation, "message_id": "m1", "text": "open on Sunday?", "sent_at": _RECENT}
    if reply_to is not None:
        payload["reply_to"] = reply_to
    _post(h, tenant, ai.INBOUND, payload, f"job-{tenant}-{conversation}")


def _drain(h) -> None:
    handler = h.handler(vendor=FakeVendor())
    for _ in range(16):
        if h.depth() == 0:
            return
        h.poll(handler, visibility=0)


def _reasons(h) -> list[str]:
    return [dead["MessageAttributes"]["reason"]["StringValue"] for dead in h.dead_letters()]


def test_a_business_id_carrying_a_graph_path_is_refused_before_any_request(ai_lane, graph):
    # Given a job whose business id would turn the send into a subscription change
    _inbound(ai_lane, LOCAL_SHOP, {"channel": "whatsapp", "business_id": SMUGGLED, "recipient": CUSTOMER})
    # When the lane runs it
    _drain(ai_lane)
    # Then it is dead-lettered as malformed, and Meta was asked nothing: the account's
    # subscription is as it was, nothing was sent or refused
    assert _reasons(ai_lane) == ["reply_to_malformed"]
    assert graph.account("999").fields == ("messages",)
    assert (graph.outbox(), graph.refused()) == ([], [])
    assert ai_lane.data(ai.conversation_pk(LOCAL_SHOP, "conv-1"), "reply#m1") is None


def test_a_job_naming_another_tenants_number_is_refused_and_nothing_is_sent(ai_lane, graph):
    # Given acme's job names shop-1's phone-number id
    _inbound(ai_lane, ACME, {"channel": "whatsapp", "business_id": SHOP_NUMBER, "recipient": CUSTOMER})
    # When the lane runs it
    _drain(ai_lane)
    # Then it is refused as not acme's asset, before anything is stored or sent
    assert _reasons(ai_lane) == ["reply_asset_not_bound"]
    assert graph.outbox() == []
    assert ai_lane.data(ai.conversation_pk(ACME, "conv-1"), "reply#m1") is None


def test_a_reply_send_posted_directly_through_another_tenants_number_is_refused(ai_lane, graph):
    # Given acme has a stored reply (a turn without reply_to), then posts the send itself,
    # naming shop-1's number: the path that skips the turn's check
    _inbound(ai_lane, ACME, None)
    _drain(ai_lane)
    assert ai_lane.data(ai.conversation_pk(ACME, "conv-1"), "reply#m1") is not None
    reply_to = {"channel": "whatsapp", "business_id": SHOP_NUMBER, "recipient": CUSTOMER}
    _post(ai_lane, ACME, replies.SEND, {"conversation": "conv-1", "token": "m1", "reply_to": reply_to}, "job-send")
    # When the lane runs it
    _drain(ai_lane)
    # Then it is refused before the number's rate is counted or the attempt recorded
    assert _reasons(ai_lane) == ["reply_asset_not_bound"]
    assert graph.outbox() == []
    assert "send_state" not in ai_lane.data(ai.conversation_pk(ACME, "conv-1"), "reply#m1")


def test_a_tenants_own_number_still_sends(ai_lane, graph):
    _inbound(ai_lane, LOCAL_SHOP, {"channel": "whatsapp", "business_id": SHOP_NUMBER, "recipient": f"+{CUSTOMER}"})
    _drain(ai_lane)
    [sent] = graph.outbox()
    assert (sent.business_id, sent.recipient) == (SHOP_NUMBER, f"+{CUSTOMER}")
    assert ai_lane.dead_letters() == []
