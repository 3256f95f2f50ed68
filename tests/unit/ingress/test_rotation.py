"""The door and the Meta secret over time: the signature header's form is checked before the secret
is read or the body touched; a rotated secret is accepted at once, the old one until its date."""

from __future__ import annotations

import hashlib
import hmac
import json

import boto3
import pytest

from pipeline.adapters.lane_queue import QueueSender
from pipeline.adapters.observability import logger_for, metrics_for
from pipeline.adapters.secrets import MetaSecrets, MetaSecretSource
from pipeline.adapters.sender_key import SenderKey
from pipeline.adapters.webhook_log import WebhookLog
from pipeline.domain import http
from pipeline.domain.webhook import delivery as webhook
from pipeline.domain.webhook.door import WebhookDoorPorts
from pipeline.handlers import ingress
from tests.support.aws import META_APP_SECRET, REGION
from tests.unit.ingress.conftest import encode, post, whatsapp_message

READ = "secretsmanager.GetSecretValue"
MALFORMED_OR_MISSING = {
    "missing": None,
    "empty": "",
    "no-prefix": "a" * 64,
    "sha1": "sha1=" + "a" * 40,
    "short": "sha256=" + "a" * 63,
    "not-hex": "sha256=" + "g" * 64,
    "two-values": "sha256=" + "a" * 64 + ",sha256=" + "b" * 64,
}


class CountingSecrets:
    """The door's secret port with every call counted: what reading the secret cost, seen from
    the door's side."""

    def __init__(self, inner: MetaSecretSource) -> None:
        self._inner = inner
        self.gets = 0
        self.refreshes = 0

    def get(self) -> MetaSecrets:
        self.gets += 1
        return self._inner.get()

    def refresh(self) -> MetaSecrets | None:
        self.refreshes += 1
        return self._inner.refresh()


@pytest.fixture
def spied(ingress_environ, clients, clock):
    config = ingress.IngressConfig.from_environ(ingress_environ)
    secrets = CountingSecrets(MetaSecretSource(clients.secretsmanager, ingress_environ["META_SECRET_ARN"], clock))
    ports = WebhookDoorPorts(
        secrets=secrets,
        log=WebhookLog(clients.dynamodb, ingress_environ["WEBHOOK_TABLE"]),
        queue=QueueSender(clients.sqs),
        senders=SenderKey(clients.secretsmanager, ingress_environ["SENDER_KEY_ARN"]),
    )
    door = ingress.build_handler(
        config, ports, logger_for(ingress_environ, "ingress"), metrics_for(ingress_environ, "ingress"), clock
    )
    return door, secrets


@pytest.mark.parametrize("header", MALFORMED_OR_MISSING.values(), ids=MALFORMED_OR_MISSING.keys())
def test_a_request_without_a_well_formed_signature_neither_reads_the_secret_nor_touches_the_body(
    spied, aws_calls, inspect, monkeypatch, header
):
    # Given a cold door, and spies on every HMAC and on reading the body out of the event
    door, secrets = spied
    hashed, bodies = [], []
    real_new, real_body_bytes = hmac.new, http.HttpRequest.body_bytes

    def spy_new(*args, **kwargs):
        hashed.append(args)
        return real_new(*args, **kwargs)

    def spy_body_bytes(self, limit):
        bodies.append(limit)
        return real_body_bytes(self, limit)

    monkeypatch.setattr(hmac, "new", spy_new)
    monkeypatch.setattr(http.HttpRequest, "body_bytes", spy_body_bytes)

    # When a 3 MB body arrives with a missing or malformed signature header
    response = door(post(b"{" + b" " * (3 * 1024 * 1024 - 2) + b"}", signature=header), None)

    # Then it is refused 401, having cost no secret read, no hash, no body decoding, no AWS call
    assert response["statusCode"] == 401
    assert (secrets.gets, secrets.refreshes) == (0, 0)
    assert (hashed, bodies) == ([], [])
    assert aws_calls.calls == []
    assert inspect.rows() == []


def _rotate(deployed, secret: dict) -> None:
    """An operator storing a new value, through a client the door does not use."""
    boto3.client("secretsmanager", region_name=REGION).put_secret_value(
        SecretId=deployed.resources.secret_arn, SecretString=json.dumps(secret)
    )


def test_after_a_rotation_the_new_secret_is_accepted_at_once_and_the_old_one_until_its_expiry(
    door, deployed, clock, inspect, aws_calls
):
    # Given a warm door that read the secret half a minute before the rotation (its cache, 60 s
    # locally, still holds the old one)
    assert door(post(encode(whatsapp_message("before"))), None)["statusCode"] == 200
    clock.advance(30)

    # When the operator stores a new app secret, keeping the old one for an hour
    _rotate(
        deployed,
        {
            "app_secret": "rotated-secret",
            "previous_app_secret": META_APP_SECRET,
            "previous_expires_at": clock.now + 3600,
            "verify_token": "t",
        },
    )

    # Then a delivery signed with the new secret is accepted straight away, by an early read
    aws_calls.reset()
    assert door(post(encode(whatsapp_message("new")), secret="rotated-secret"), None)["statusCode"] == 200
    assert aws_calls.calls[0] == READ
    # And one signed with the old secret is still accepted before its expiry
    clock.advance(3599)
    assert door(post(encode(whatsapp_message("old, in time")), secret=META_APP_SECRET), None)["statusCode"] == 200
    # And from the expiry on, the old secret is refused while the new one keeps working
    clock.advance(1)
    late = encode(whatsapp_message("old, too late"))
    assert door(post(late, secret=META_APP_SECRET), None)["statusCode"] == 403
    assert door(post(encode(whatsapp_message("new again")), secret="rotated-secret"), None)["statusCode"] == 200
    assert inspect.row(webhook.log_id(late)) is None


def test_a_secret_removed_by_the_operator_stops_verifying_within_the_cache_time(door, deployed, clock):
    # Given a warm door that accepts the current secret
    raw = encode(whatsapp_message("x"))
    assert door(post(raw), None)["statusCode"] == 200

    # When the operator replaces it outright (a leaked secret: no previous kept)
    _rotate(deployed, {"app_secret": "replacement", "verify_token": "t"})

    # Then the leaked secret verifies only until the instance's cache expires (local: 60 s)
    clock.advance(59)
    assert door(post(encode(whatsapp_message("y"))), None)["statusCode"] == 200
    clock.advance(1)
    assert door(post(encode(whatsapp_message("z"))), None)["statusCode"] == 403


def test_a_flood_of_forged_signatures_costs_at_most_one_read_per_refresh_interval(door, aws_calls, clock):
    # Given a warm door (local: one early read per 5 s at most)
    door(post(encode(whatsapp_message("warm"))), None)
    aws_calls.reset()

    # When forged, well-formed signatures arrive eight a second for 20 s
    for n in range(160):
        raw = encode(whatsapp_message(f"forged {n}"))
        forged = "sha256=" + hashlib.sha256(raw).hexdigest()
        assert door(post(raw, signature=forged), None)["statusCode"] == 403
        clock.advance(0.125)

    # Then Secrets Manager was read once per 5 s (at 5, 10 and 15 s), and nothing else was called
    assert aws_calls.calls == [READ] * 3
