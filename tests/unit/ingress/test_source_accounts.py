"""The door stamps when each source account was last heard from, and a stamp that fails never
fails a delivery (adapters/accounts_seen.py, domain/webhook/account_silence.py)."""

from __future__ import annotations

import boto3

from pipeline import schema, settings
from pipeline.adapters.accounts_seen import PARTITION
from pipeline.adapters.items import from_item
from pipeline.domain.webhook.account_silence import slot_field, slot_of
from tests.support.aws import REGION
from tests.unit.ingress.conftest import encode, page_comment, post, whatsapp_message


def _item(deployed, account: str) -> dict | None:
    found = boto3.client("dynamodb", region_name=REGION).get_item(
        TableName=deployed.resources.accounts_table, Key={schema.PK: {"S": PARTITION}, schema.SK: {"S": account}}
    )
    return None if "Item" not in found else from_item(found["Item"])


def test_a_delivery_stamps_its_account_with_the_time_product_slot_and_expiry(door, deployed, clock, ingress_environ):
    policy = settings.account_silence(ingress_environ)
    # When a WhatsApp account and a Page each deliver
    door(post(encode(whatsapp_message(waba="5550001"))), None)
    door(post(encode(page_comment(page="7770001"))), None)

    # Then each account's item says when, what it is, which slot it was heard in, and when it is forgotten
    whatsapp = _item(deployed, "5550001")
    assert whatsapp is not None
    assert float(whatsapp["last_seen"]) == clock.now
    assert whatsapp["product"] == "whatsapp"
    slot = slot_of(clock.now, policy)
    assert int(whatsapp[slot_field(slot, policy)]) == slot
    assert int(whatsapp[schema.TTL]) == int(clock.now + policy.forget_seconds)
    assert _item(deployed, "7770001")["product"] == "page"


def test_a_later_delivery_after_the_interval_moves_the_stamp_and_marks_its_slot(door, deployed, clock, ingress_environ):
    policy = settings.account_silence(ingress_environ)
    door(post(encode(whatsapp_message("first", waba="5550002"))), None)
    first_slot = slot_of(clock.now, policy)
    # When the account delivers again a slot later
    clock.advance(policy.slot_seconds)
    door(post(encode(whatsapp_message("second", waba="5550002"))), None)

    # Then the stamp is the later time and both slots are remembered
    item = _item(deployed, "5550002")
    assert float(item["last_seen"]) == clock.now
    assert int(item[slot_field(first_slot, policy)]) == first_slot
    assert int(item[slot_field(first_slot + 1, policy)]) == first_slot + 1


def test_a_stamp_that_fails_never_fails_the_delivery_and_costs_no_extra_call_until_the_interval(
    door, aws_calls, inspect, log_records
):
    # Given the accounts table refuses writes
    aws_calls.fail("dynamodb.UpdateItem")

    # When two deliveries of one account arrive
    first = door(post(encode(whatsapp_message("one", waba="5550003"))), None)
    second = door(post(encode(whatsapp_message("two", waba="5550003"))), None)

    # Then both are taken and sent, the failure is logged, and the second did not try again
    assert first["statusCode"] == second["statusCode"] == 200
    assert len(inspect.messages("messages")) == 2
    assert aws_calls.calls.count("dynamodb.UpdateItem") == 1
    assert any(r.getMessage() == "could not note the delivery's source accounts" for r in log_records)


def test_an_unparseable_delivery_stamps_no_account(door, deployed):
    door(post(b'{"object": "page", "entry": [{"id": "7770009"'), None)

    assert _item(deployed, "7770009") is None
