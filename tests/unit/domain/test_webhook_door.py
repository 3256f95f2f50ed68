"""The webhook door's rules alone, on in-memory ports: what it writes and sends for each delivery,
and which failures it answers itself and which it raises as a 500 with their reason."""

from __future__ import annotations

import pytest

from pipeline import schema
from pipeline.domain import http, retention
from pipeline.domain.meta_secret import MetaSecrets, SecretsMisconfigured, SecretsUnavailable
from pipeline.domain.signature import sign
from pipeline.domain.webhook import delivery as webhook
from pipeline.domain.webhook.door import WebhookDoor, WebhookDoorPorts, WebhookDoorRules
from pipeline.metric_filters import ENQUEUED_MESSAGE
from pipeline.metric_names import WebhookFailure
from tests.unit.domain.door_ports import (
    APP_SECRET,
    NOW,
    QUEUE_URLS,
    VERIFY_TOKEN,
    DeliveryLog,
    Hasher,
    Queue,
    Secrets,
    Telemetry,
    request,
)
from tests.unit.ingress.conftest import encode, page_comment, whatsapp_message

RULES = WebhookDoorRules(
    max_body_bytes=64 * 1024, max_json_depth=64, queue_urls=QUEUE_URLS, raw_deliveries_seconds=4 * 86400
)


class Door:
    def __init__(self, rules: WebhookDoorRules = RULES) -> None:
        self.rules = rules
        self.secrets, self.log, self.queue, self.senders = Secrets(), DeliveryLog(), Queue(), Hasher()
        self.telemetry = Telemetry()

    def __call__(self, http_request: http.HttpRequest) -> http.Reply:
        ports = WebhookDoorPorts(secrets=self.secrets, log=self.log, queue=self.queue, senders=self.senders)
        return WebhookDoor(self.rules, ports, self.telemetry, lambda: NOW).answer(http_request)


@pytest.fixture
def door() -> Door:
    return Door()


def delivery(raw: bytes, *, secret: str = APP_SECRET, signature: str | None = None) -> http.HttpRequest:
    headers = {"x-hub-signature-256": signature if signature is not None else sign(secret, raw)}
    return request("POST", "/webhooks/meta", body=raw.decode(), headers=headers)


def test_a_new_delivery_is_logged_before_it_is_sent_and_answered_200(door):
    raw = encode(whatsapp_message())

    reply = door(delivery(raw))

    assert (reply.status, reply.body) == (200, "ok")
    (row,) = door.log.rows.values()
    assert row.id == webhook.log_id(raw)
    assert row.expires_at == retention.expiry(NOW, RULES.raw_deliveries_seconds)
    assert row.sender_hash == "hash-of-15551234567"
    ((url, sent),) = door.queue.sent
    assert url == QUEUE_URLS["messages"]
    assert (sent.envelope.id, sent.envelope.created_at) == (row.id, NOW)
    # One line says so, the line WebhookEnqueued is counted from (pipeline/metric_filters.py)
    assert ("info", ENQUEUED_MESSAGE, {"lane": "messages"}) in [
        (level, message, {"lane": fields.get("lane")}) for level, message, fields in door.telemetry.lines
    ]
    assert door.telemetry.counts == []


def test_a_comment_goes_to_the_engagement_lane(door):
    door(delivery(encode(page_comment())))

    assert [url for url, _ in door.queue.sent] == [QUEUE_URLS["engagement"]]


def test_a_redelivery_of_a_queued_row_is_sent_again_as_of_its_first_receipt(door):
    raw = encode(whatsapp_message())
    door(delivery(raw))
    first = door.log.rows[webhook.log_id(raw)].received_at

    reply = door(delivery(raw))

    assert reply.status == 200
    assert [sent.envelope.created_at for _, sent in door.queue.sent] == [first, first]
    assert ("WebhookDuplicate", {}) in door.telemetry.counts


def test_a_redelivery_of_a_finished_row_is_answered_and_not_sent(door):
    raw = encode(whatsapp_message())
    door(delivery(raw))
    door.log.statuses[webhook.log_id(raw)] = schema.RowStatus.DONE

    reply = door(delivery(raw))

    assert reply.status == 200
    assert len(door.queue.sent) == 1


def test_an_unparseable_body_is_logged_and_never_sent(door):
    reply = door(delivery(b"{not json"))

    assert reply.status == 200
    (row,) = door.log.rows.values()
    assert (row.route, row.unparseable_reason) == (None, "invalid_json")
    assert door.queue.sent == []


def test_a_failed_send_that_is_noted_for_the_sweeper_is_still_200(door):
    door.queue.fails = True
    raw = encode(whatsapp_message())

    reply = door(delivery(raw))

    assert reply.status == 200
    assert door.log.unsent == [(webhook.log_id(raw), NOW)]
    assert ("EnqueueFailed", {"Lane": "messages"}) in door.telemetry.counts


def _misconfigured(door: Door) -> None:
    door.secrets.error = SecretsMisconfigured("the Meta secret is not JSON")


def _secrets_unreadable(door: Door) -> None:
    door.secrets.error = SecretsUnavailable("throttled")


def _sender_key_unreadable(door: Door) -> None:
    door.senders.unavailable = True


def _log_unwritable(door: Door) -> None:
    door.log.write_fails = True


def _send_and_note_fail(door: Door) -> None:
    door.queue.fails = True
    door.log.mark_fails = True


@pytest.mark.parametrize(
    ("breakage", "reason", "row_written"),
    [
        (_misconfigured, WebhookFailure.MISCONFIGURED, False),
        (_secrets_unreadable, WebhookFailure.SECRETS_UNAVAILABLE, False),
        (_sender_key_unreadable, WebhookFailure.SECRETS_UNAVAILABLE, False),
        (_log_unwritable, WebhookFailure.LOG_WRITE_FAILED, False),
        (_send_and_note_fail, WebhookFailure.ENQUEUE_UNNOTED, True),
    ],
    ids=["misconfigured", "secrets-unreadable", "sender-key-unreadable", "log-unwritable", "send-and-note-fail"],
)
def test_a_failure_meta_must_retry_is_raised_with_its_reason_after_saying_why(door, breakage, reason, row_written):
    # Given one dependency broken
    breakage(door)

    # When a delivery arrives, then the rules raise the 500's reason instead of answering
    with pytest.raises(http.Failed) as raised:
        door(delivery(encode(whatsapp_message())))

    assert raised.value.reason == reason
    assert door.telemetry.lines, "the reason is logged where it is known"
    assert bool(door.log.rows) is row_written
    assert door.queue.sent == []


@pytest.mark.parametrize("header", [None, "", "sha256=" + "z" * 64])
def test_a_delivery_without_a_well_formed_signature_is_401_without_reading_the_secret(door, header):
    door.secrets.error = SecretsUnavailable("would fail if read")
    raw = encode(whatsapp_message())
    headers = {} if header is None else {"x-hub-signature-256": header}

    reply = door(request("POST", "/webhooks/meta", body=raw.decode(), headers=headers))

    assert reply.status == 401
    assert door.log.rows == {}


def test_a_mismatch_looks_once_for_a_newer_secret_and_accepts_what_it_signed(door):
    door.secrets.newer = MetaSecrets("rotated-secret", VERIFY_TOKEN)

    reply = door(delivery(encode(whatsapp_message()), secret="rotated-secret"))

    assert reply.status == 200
    assert door.secrets.refreshes == 1


def test_a_mismatch_with_nothing_newer_is_403_and_nothing_is_written(door):
    reply = door(delivery(encode(whatsapp_message()), secret="forged"))

    assert reply.status == 403
    assert door.secrets.refreshes == 1
    assert (door.log.rows, door.queue.sent) == ({}, [])


def test_the_handshake_echoes_the_challenge_only_for_the_verify_token(door):
    def handshake(token: str) -> http.Reply:
        query = f"hub.mode=subscribe&hub.verify_token={token}&hub.challenge=1158201444"
        return door(request("GET", "/webhooks/meta", raw_query=query))

    assert (handshake(VERIFY_TOKEN).status, handshake(VERIFY_TOKEN).body) == (200, "1158201444")
    assert (handshake("wrong").status, handshake("wrong").body) == (403, "")
    assert ("WebhookRejected", {"Reason": "handshake_refused"}) in door.telemetry.counts


def test_any_other_method_is_405(door):
    reply = door(request("PUT", "/webhooks/meta"))

    assert (reply.status, reply.headers["allow"]) == (405, "GET, POST")
