"""The webhook door behind a Lambda function URL (`WebhookDoor`, stacks/config/doors.py): the same
handler takes the URL's events, payload format 2.0 as the HTTP API's but with `$default` for the
route, no path parameters, and a body Lambda may base64-encode whatever its content type."""

from __future__ import annotations

import base64
from urllib.parse import urlencode

from pipeline import schema
from pipeline.domain.signature import sign
from pipeline.domain.webhook import delivery as webhook
from tests.support.aws import META_APP_SECRET, META_VERIFY_TOKEN, function_url_event
from tests.unit.ingress.conftest import PATH, encode, whatsapp_message


def _posted(raw: bytes, *, as_base64: bool, signature: str | None = None) -> dict:
    headers = {"content-type": "application/json", "x-hub-signature-256": signature or sign(META_APP_SECRET, raw)}
    body = base64.b64encode(raw).decode() if as_base64 else raw.decode()
    return function_url_event("POST", PATH, body=body, headers=headers, is_base64=as_base64)


def test_a_signed_delivery_to_the_function_url_is_logged_and_enqueued_as_behind_the_api(door, inspect):
    # Given a signed WhatsApp text, as Lambda hands a function URL's POST to the function
    raw = encode(whatsapp_message("¿dónde está mi pedido?"))
    for as_base64 in (False, True):
        # When it arrives as text, and again as Lambda's base64 of the same bytes
        response = door(_posted(raw, as_base64=as_base64), None)
        # Then each is answered 200, and the second is the same delivery (the same bytes were signed)
        assert response["statusCode"] == 200
    row = inspect.row(webhook.log_id(raw))
    assert row["status"]["S"] == schema.RowStatus.QUEUED
    assert inspect.body(webhook.log_id(raw)) == raw
    assert len(inspect.rows()) == 1
    # (a redelivery of a row still queued is sent again, as behind the API)
    assert len(inspect.messages("messages")) == 2


def test_the_body_cap_and_the_signature_hold_behind_the_function_url(door, ingress_environ, inspect):
    # Given a body one byte over the door's cap (the function URL itself would take up to 6 MB)
    raw = b'{"object":"page","pad":"' + b"x" * (3 * 1024 * 1024) + b'"}'
    # Then it is refused before anything is written, text or base64
    assert door(_posted(raw, as_base64=False), None)["statusCode"] == 413
    assert door(_posted(raw, as_base64=True), None)["statusCode"] == 413
    # And a delivery signed with another secret is refused: the URL's AuthType NONE lets anyone post
    forged = encode(whatsapp_message("hi"))
    assert door(_posted(forged, as_base64=False, signature=sign("another-secret", forged)), None)["statusCode"] == 403
    assert inspect.rows() == []


def test_metas_subscription_check_through_the_function_url_gets_its_challenge(door):
    params = [("hub.mode", "subscribe"), ("hub.verify_token", META_VERIFY_TOKEN), ("hub.challenge", "1158201444")]

    response = door(function_url_event("GET", PATH, raw_query=urlencode(params)), None)

    assert (response["statusCode"], response["body"]) == (200, "1158201444")
