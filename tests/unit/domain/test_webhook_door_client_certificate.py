"""With mutual TLS on, the door admits a webhook only with Meta's client certificate: a request that
came the execute-api way (no certificate) or with anyone else's is refused before anything is
read, written or sent. Off, nothing is asked for."""

from __future__ import annotations

from dataclasses import replace

import pytest

from pipeline.domain import http
from pipeline.domain.signature import sign
from tests.unit.domain.door_ports import (
    APP_SECRET,
    VERIFY_TOKEN,
    body_of,
)
from tests.unit.domain.door_ports import request as http_request
from tests.unit.domain.test_webhook_door import RULES
from tests.unit.domain.test_webhook_door import Door as WebhookDoorHarness
from tests.unit.ingress.conftest import encode, whatsapp_message

META = "client.webhooks.fbclientcerts.com"
META_SUBJECT = f"CN={META},O=Meta Platforms\\, Inc.,L=Menlo Park,ST=California,C=US"


def Door(client_subject: str | None) -> WebhookDoorHarness:
    return WebhookDoorHarness(replace(RULES, client_subject=client_subject))


def delivery(subject: str | None) -> http.HttpRequest:
    raw = encode(whatsapp_message())
    return http_request(
        "POST",
        "/webhooks/meta",
        body=raw.decode(),
        headers={"x-hub-signature-256": sign(APP_SECRET, raw)},
        client_subject=subject,
    )


def handshake(subject: str | None) -> http.HttpRequest:
    query = f"hub.mode=subscribe&hub.verify_token={VERIFY_TOKEN}&hub.challenge=1158201444"
    return http_request("GET", "/webhooks/meta", raw_query=query, client_subject=subject)


def test_with_mutual_tls_a_delivery_with_metas_certificate_is_taken():
    door = Door(META)

    reply = door(delivery(META_SUBJECT))

    assert reply.status == 200
    assert len(door.log.rows) == 1
    assert len(door.queue.sent) == 1


@pytest.mark.parametrize(
    ("subject", "reason", "message"),
    [
        (None, "client_certificate_missing", "a client certificate is required"),
        (
            "CN=someone.example.com,O=Someone,C=US",
            "client_certificate_refused",
            "the client certificate is not accepted",
        ),
        (f"CN={META}+CN=someone.example.com", "client_certificate_refused", "the client certificate is not accepted"),
    ],
)
def test_with_mutual_tls_a_delivery_without_metas_certificate_is_403_and_nothing_is_read_written_or_sent(
    subject, reason, message
):
    door = Door(META)
    door.secrets.error = AssertionError("the secret must not be read for a refused certificate")

    reply = door(delivery(subject))

    assert (reply.status, body_of(reply)["message"]) == (403, message)
    assert (door.log.rows, door.queue.sent) == ({}, [])
    assert ("WebhookRejected", {"Reason": reason}) in door.telemetry.counts


def test_with_mutual_tls_the_subscription_handshake_needs_the_certificate_too():
    door = Door(META)

    assert door(handshake(None)).status == 403
    assert (door(handshake(META_SUBJECT)).status, door(handshake(META_SUBJECT)).body) == (200, "1158201444")


def test_without_mutual_tls_no_certificate_is_asked_for():
    door = Door(None)

    assert door(delivery(None)).status == 200
    assert door(handshake(None)).status == 200
