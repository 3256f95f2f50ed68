"""The door as deployed with mutual TLS on: WEBHOOK_SETTINGS names the client certificate's common
name, and a delivery is stored only when API Gateway passed on Meta's certificate."""

from __future__ import annotations

import json

from pipeline.handlers import ingress
from tests.unit.ingress.conftest import encode, post, whatsapp_message

META_SUBJECT = "CN=client.webhooks.fbclientcerts.com,O=Meta Platforms\\, Inc.,L=Menlo Park,ST=California,C=US"


def _with_mutual_tls(environ: dict[str, str]) -> dict[str, str]:
    settings = json.loads(environ["WEBHOOK_SETTINGS"])
    assert settings["client_subject"] is None  # the local template asks for none
    settings["client_subject"] = "client.webhooks.fbclientcerts.com"
    return {**environ, "WEBHOOK_SETTINGS": json.dumps(settings)}


def _post(raw: bytes, subject: str | None) -> dict:
    event = post(raw)
    if subject is not None:
        event["requestContext"]["authentication"] = {"clientCert": {"subjectDN": subject}}
    return event


def test_a_delivery_is_stored_only_with_metas_certificate(ingress_environ, clients, clock, inspect):
    door = ingress.create_handler(_with_mutual_tls(ingress_environ), clients=clients, clock=clock)
    refused = encode(whatsapp_message("came the execute-api way"))
    forged = encode(whatsapp_message("someone else's certificate"))
    taken = encode(whatsapp_message("from Meta"))

    assert door(_post(refused, None), None)["statusCode"] == 403
    assert door(_post(forged, "CN=hooks.example.net"), None)["statusCode"] == 403
    assert inspect.rows() == []

    assert door(_post(taken, META_SUBJECT), None)["statusCode"] == 200
    assert len(inspect.rows()) == 1
    assert len(inspect.messages("messages")) == 1
