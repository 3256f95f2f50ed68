"""POST /jobs refuses a `reply_to` that is not Meta's shapes, or that sends from an asset the job's
tenant does not own (TENANT_ASSETS), before admission or any write; through the handler, over moto."""

from __future__ import annotations

import pytest

from pipeline.adapters.items import from_item
from pipeline.domain.jobs import requests as jobs
from stacks.config.environments import LOCAL_ASSETS, LOCAL_SHOP
from tests.unit.jobs.conftest import PARTNER_ACME, PRODUCER, body_of, submit

SHOP_NUMBER = LOCAL_ASSETS.tenants[LOCAL_SHOP].phones[0]
ACME_NUMBER = LOCAL_ASSETS.tenants["acme"].phones[0]


def turn(tenant: str, **reply_to: str) -> dict:
    where = {"channel": "whatsapp", "business_id": ACME_NUMBER, "recipient": "15551230001", **reply_to}
    payload = {"conversation": "conv-1", "message_id": "m1", "text": "hi", "reply_to": where}
    return {"lane": "ai", "kind": "ai.inbound", "tenant": tenant, "payload": payload}


def test_a_caller_bound_to_acme_cannot_reply_through_another_tenants_number(api, inspect, aws_calls):
    # When partner-acme posts a turn whose reply would go out from shop-1's phone number
    response = api(submit(turn("acme", business_id=SHOP_NUMBER), caller=PARTNER_ACME), None)
    # Then it is refused 403 naming why, and nothing is written or sent
    assert response["statusCode"] == 403
    assert body_of(response)["message"] == (
        f"reply_asset_not_bound: tenant acme does not own whatsapp sender {SHOP_NUMBER} (TENANT_ASSETS)"
    )
    assert inspect.job_rows() == []
    assert inspect.messages("ai") == []
    assert inspect.queued("ai", "acme") == 0


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("business_id", "999/subscribed_apps?subscribed_fields=feed&x="),
        ("business_id", "../me"),
        ("business_id", ""),
        ("business_id", "1" * 21),
        ("business_id", "\uff11\uff12\uff13"),  # full-width digits: str.isdigit says yes, a Graph URL says no
        ("recipient", "15551230001/messages"),
        ("recipient", "us.13491208655302741918"),  # a BSUID's country code is capitals
        ("recipient", "US.1349/messages"),
        ("channel", "sms"),
    ],
)
def test_a_reply_to_that_is_not_metas_shape_is_400_and_nothing_is_written(api, inspect, field, value):
    response = api(submit(turn("acme", **{field: value}), caller=PARTNER_ACME), None)
    assert response["statusCode"] == 400
    assert body_of(response)["message"].startswith("reply_to_malformed: reply_to.")
    assert inspect.job_rows() == []


def test_a_reply_to_a_customers_business_scoped_user_id_is_taken(api, inspect):
    # A customer whose username hides their number is answered by BSUID
    body = turn("acme", recipient="US.13491208655302741918")
    body["payload"]["conversation"] = "US.13491208655302741918"
    response = api(submit(body, caller=PARTNER_ACME), None)
    assert response["statusCode"] == 202
    [row] = inspect.job_rows()
    assert from_item(row)["payload"]["reply_to"]["recipient"] == "US.13491208655302741918"


def test_a_reply_send_posted_directly_is_held_to_the_same_binding(api, inspect):
    # A producer granted every tenant still cannot send one tenant's reply from another's number
    body = turn("acme", business_id=SHOP_NUMBER)
    reply_to = body["payload"]["reply_to"]
    body.update(kind="reply.send", payload={"conversation": "c", "token": "m1", "reply_to": reply_to})
    response = api(submit(body, caller=PRODUCER), None)
    assert response["statusCode"] == 403
    assert inspect.job_rows() == []


def test_a_tenants_own_number_is_accepted(api, inspect):
    response = api(submit(turn("acme"), caller=PARTNER_ACME), None)
    assert response["statusCode"] == 202
    assert jobs.is_job_id(body_of(response)["id"])
