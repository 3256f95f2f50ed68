"""One Meta delivery batching several businesses: each entry's messages, statuses and comments are
filed under its own business, never under the delivery's first entry's."""

from __future__ import annotations

from pipeline.domain.webhook import routing
from stacks.config.environments import LOCAL_ASSETS, LOCAL_SHOP
from tests.unit.tasks.payloads import COMMENTER, FakeVendor, comment_at, message_at, person, status_at

SHOP = LOCAL_ASSETS.tenants[LOCAL_SHOP]
ACME = LOCAL_ASSETS.tenants["acme"]
SHOP_PAGE, ACME_PAGE = SHOP.pages[0], ACME.pages[0]
SHOP_WABA, ACME_WABA = SHOP.waba[0], ACME.waba[0]
SHOP_CUSTOMER, ACME_CUSTOMER = "16505551234", "16505559876"


def _page_entry(page: str, psid: str, mid: str, text: str) -> dict:
    """An entry as Meta sends a Page's Messenger message (its webhook reference's example)."""
    at = 1_458_692_752_478
    event = {"sender": {"id": psid}, "recipient": {"id": page}, "timestamp": at, "message": {"mid": mid, "text": text}}
    return {"id": page, "time": at, "messaging": [event]}


def _waba_entry(waba: str, phone_number_id: str, customer: str, wamid: str, read: str) -> dict:
    """An entry as Meta sends a WhatsApp Business Account's messages field: a customer's text and
    the status of a message the business sent."""
    value = {
        "messaging_product": "whatsapp",
        "metadata": {"display_phone_number": "15550783881", "phone_number_id": phone_number_id},
        "contacts": [{"profile": {"name": "Sheena Nelson"}, "wa_id": customer}],
        "messages": [
            {"from": customer, "id": wamid, "timestamp": "1749416383", "type": "text", "text": {"body": "blue?"}}
        ],
        "statuses": [
            {
                "id": read,
                "status": "delivered",
                "timestamp": "1750263773",
                "recipient_id": customer,
                "conversation": {"id": "6ceb9d929c0f8d4b3e8cdb8d9e2b1f0a", "origin": {"type": "service"}},
            }
        ],
    }
    return {"id": waba, "changes": [{"value": value, "field": "messages"}]}


def _comment_entry(page: str, comment_id: str) -> dict:
    value = {
        "from": {"id": COMMENTER, "name": "Sam"},
        "post": {"status_type": "added_photos", "is_published": True, "id": f"{page}_77"},
        "message": "is this in stock?",
        "post_id": f"{page}_77",
        "comment_id": comment_id,
        "created_time": 1_700_000_000,
        "item": "comment",
        "parent_id": f"{page}_77",
        "verb": "add",
    }
    return {"id": page, "time": 1_700_000_000, "changes": [{"value": value, "field": "feed"}]}


def _deliver(h, payload: dict) -> routing.Route:
    route = routing.route(payload)  # what the door files the delivery under
    h.send(h.webhook_row(payload, tenant=route.tenant, lane=route.lane, inline=True))
    return route


def _messages_of(h, who: str) -> list[str]:
    return [i["sk"] for i in h.data_items(person(who)) if i["sk"].startswith("msg#")]


def test_two_pages_messages_in_one_delivery_are_each_stored_under_their_own_page(lane):
    # Given one POST batching a message to shop-1's Page and one to acme's
    h = lane("messages")
    payload = {
        "object": "page",
        "entry": [
            _page_entry(SHOP_PAGE, "7001", "m_shop", "hello shop"),
            _page_entry(ACME_PAGE, "7002", "m_acme", "hello acme"),
        ],
    }
    route = _deliver(h, payload)
    # When the messages lane runs it
    response, _ = h.poll(h.handler())
    # Then it sits in the first Page's fair-queue group, but each message is filed under its own Page
    assert response == {"batchItemFailures": []}
    assert route.tenant == SHOP_PAGE
    assert h.data(*message_at("m_acme", sender="7002", tenant=ACME_PAGE))["text"] == "hello acme"
    assert _messages_of(h, "7002") == [f"msg#{ACME_PAGE}#m_acme"]
    assert _messages_of(h, "7001") == [f"msg#{SHOP_PAGE}#m_shop"]
    # And the binding names the tenant each Page belongs to
    assert (LOCAL_ASSETS.owner_of(SHOP_PAGE), LOCAL_ASSETS.owner_of(ACME_PAGE)) == (LOCAL_SHOP, "acme")


def test_two_whatsapp_accounts_messages_and_statuses_in_one_delivery_stay_apart(lane):
    # Given one POST batching two WhatsApp Business Accounts, each with a message and a status,
    # the statuses for one message id (Meta's ids are per account; the pipeline must not merge them)
    h = lane("messages")
    payload = {
        "object": "whatsapp_business_account",
        "entry": [
            _waba_entry(SHOP_WABA, SHOP.phones[0], SHOP_CUSTOMER, "wamid.shop", "wamid.same"),
            _waba_entry(ACME_WABA, ACME.phones[0], ACME_CUSTOMER, "wamid.acme", "wamid.same"),
        ],
    }
    _deliver(h, payload)
    response, _ = h.poll(h.handler())
    assert response == {"batchItemFailures": []}
    assert h.data(*message_at("wamid.acme", sender=ACME_CUSTOMER, tenant=ACME_WABA)) is not None
    assert h.data(*message_at("wamid.acme", sender=ACME_CUSTOMER, tenant=SHOP_WABA)) is None
    assert h.data(*status_at("wamid.same", recipient=ACME_CUSTOMER, tenant=ACME_WABA))["status"] == "delivered"
    assert h.data(*status_at("wamid.same", recipient=SHOP_CUSTOMER, tenant=SHOP_WABA))["status"] == "delivered"


def test_two_pages_comments_in_one_delivery_are_each_triaged_under_their_own_page(lane):
    h = lane("engagement")
    payload = {"object": "page", "entry": [_comment_entry(SHOP_PAGE, "c_shop"), _comment_entry(ACME_PAGE, "c_acme")]}
    route = _deliver(h, payload)
    assert route.lane == "engagement"
    vendor = FakeVendor(answers=["question", "complaint"])
    response, _ = h.poll(h.handler(vendor=vendor))
    assert response == {"batchItemFailures": []}
    assert h.data(*comment_at("c_shop", tenant=SHOP_PAGE))["label"] == "question"
    assert h.data(*comment_at("c_acme", tenant=ACME_PAGE))["label"] == "complaint"
    assert h.data(*comment_at("c_acme", tenant=SHOP_PAGE)) is None
