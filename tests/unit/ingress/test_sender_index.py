"""The door indexes a delivery by the one person it names, on the row it writes anyway."""

from __future__ import annotations

import boto3

from pipeline import schema
from pipeline.domain import senders
from pipeline.domain.webhook import delivery as webhook
from pipeline.handlers import ingress
from tests.support.aws import REGION, SENDER_KEY
from tests.unit.ingress.conftest import encode, page_comment, post, whatsapp_message

KEY = SENDER_KEY.encode()


def _messages_from(*numbers: str) -> dict:
    payload = whatsapp_message()
    value = payload["entry"][0]["changes"][0]["value"]
    value["messages"] = [
        {"from": number, "id": f"wamid.{n}", "type": "text", "text": {"body": "hi"}} for n, number in enumerate(numbers)
    ]
    return payload


def test_a_delivery_from_one_person_is_indexed_by_their_keyed_hash(door, inspect):
    # Given a WhatsApp text from one customer
    raw = encode(whatsapp_message("hello"))

    # When the door logs it
    assert door(post(raw), None)["statusCode"] == 200

    # Then the row carries the customer's hash under the pipeline's key, and not their number
    row = inspect.row(webhook.log_id(raw))
    assert row[schema.SENDER_HASH]["S"] == senders.sender_hash(KEY, "+1 555 123 4567")
    assert "15551234567" not in row[schema.SENDER_HASH]["S"]
    assert row[schema.SENDER_HASH]["S"] != senders.sender_hash(b"another key", "15551234567")


def test_a_messenger_event_is_indexed_by_the_person_not_the_page(door, inspect):
    payload = {
        "object": "page",
        "entry": [
            {
                "id": "998877",
                "time": 1,
                "messaging": [{"sender": {"id": "2468"}, "recipient": {"id": "998877"}, "message": {"mid": "m.1"}}],
            }
        ],
    }
    raw = encode(payload)

    door(post(raw), None)

    assert inspect.row(webhook.log_id(raw))[schema.SENDER_HASH]["S"] == senders.sender_hash(KEY, "2468")


def test_a_delivery_naming_several_people_or_nobody_carries_no_index_key(door, inspect):
    # A batch from two customers: an item has one index key, so the consumer indexes it
    several = encode(_messages_from("15551234567", "15557654321"))
    # A comment Meta sent without its author
    nobody = encode(page_comment())

    for raw in (several, nobody):
        assert door(post(raw), None)["statusCode"] == 200
        assert schema.SENDER_HASH not in inspect.row(webhook.log_id(raw))


def test_without_the_sender_key_a_delivery_is_refused_500_and_nothing_is_logged(
    ingress_environ, clients, clock, inspect, metrics
):
    # Given a door whose sender key cannot be read
    missing = boto3.client("secretsmanager", region_name=REGION).create_secret(Name="empty", SecretString="{}")["ARN"]
    door = ingress.create_handler({**ingress_environ, "SENDER_KEY_ARN": missing}, clients=clients, clock=clock)

    # When a delivery naming a person arrives
    response = door(post(encode(whatsapp_message())), None)

    # Then Meta is told to retry, and no row is left that an erasure could not find
    assert response["statusCode"] == 500
    assert inspect.rows() == []
    assert ("WebhookFailed", {"Reason": "secrets_unavailable"}) in metrics()
