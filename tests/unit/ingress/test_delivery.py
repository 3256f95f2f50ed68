"""Signed deliveries: logged first, routed, enqueued once per distinct body."""

from __future__ import annotations

import base64
import json
import os

from bench.consumer_costs import item_size
from bench.scenarios.message_text import varied_text
from pipeline import schema
from pipeline.domain.envelope import Envelope
from pipeline.domain.webhook import body as webhook_body
from pipeline.domain.webhook import delivery as webhook
from tests.unit.ingress.conftest import NOW, encode, page_comment, post, whatsapp_message


def test_new_delivery_is_logged_queued_then_enqueued_on_its_lane(door, inspect):
    # Given a signed WhatsApp message delivery
    raw = encode(whatsapp_message("where is my order?"))

    # When Meta posts it
    response = door(post(raw), None)

    # Then it is answered 200 and logged as a queued row keyed by the body's digest, outside the
    # sweeper's pending index (its message reached the lane)
    assert response["statusCode"] == 200
    row_id = webhook.log_id(raw)
    row = inspect.row(row_id)
    assert row["status"]["S"] == schema.RowStatus.QUEUED
    assert float(row["received_at"]["N"]) == NOW
    assert schema.PENDING_SHARD not in row
    assert schema.PENDING_SINCE not in row
    assert row["lane"]["S"] == "messages"
    assert row["tenant"]["S"] == "102030405060"
    assert row["kind"]["S"] == "whatsapp.messages"
    assert "replays" not in row  # a row the sweeper never replayed says nothing of replays
    # And one message carries the envelope, grouped by tenant, with the payload inline
    [message] = inspect.messages("messages")
    envelope = Envelope.from_json(message["Body"])
    assert message["Attributes"]["MessageGroupId"] == "102030405060"
    assert (envelope.id, envelope.source, envelope.lane, envelope.kind) == (
        row_id,
        "webhook",
        "messages",
        "whatsapp.messages",
    )
    assert envelope.payload == whatsapp_message("where is my order?")
    assert envelope.created_at == NOW
    assert inspect.messages("engagement") == []


def test_comment_delivery_goes_to_the_engagement_lane(door, inspect):
    raw = encode(page_comment(page="4455"))

    assert door(post(raw), None)["statusCode"] == 200

    [message] = inspect.messages("engagement")
    assert Envelope.from_json(message["Body"]).tenant == "4455"
    assert inspect.messages("messages") == []


def test_redelivery_of_the_same_bytes_makes_no_second_row_and_is_resent_while_pending(door, inspect, metrics):
    # Given a delivery that was logged and enqueued
    raw = encode(whatsapp_message())
    door(post(raw), None)

    # When Meta delivers the very same bytes again (it retries what it thinks failed)
    response = door(post(raw), None)

    # Then there is still one row, and the pending row is sent again with its original time
    assert response["statusCode"] == 200
    assert len(inspect.rows()) == 1
    messages = inspect.messages("messages")
    assert len(messages) == 2
    assert {Envelope.from_json(m["Body"]).id for m in messages} == {webhook.log_id(raw)}
    assert ("WebhookDuplicate", {}) in metrics()


def test_redelivery_of_a_finished_row_is_answered_and_not_resent(door, inspect):
    # Given a delivery a consumer has already finished
    raw = encode(whatsapp_message())
    door(post(raw), None)
    inspect.messages("messages")
    inspect.mark_done(webhook.log_id(raw))
    before = len(inspect.messages("messages"))

    # When it is delivered again
    response = door(post(raw), None)

    # Then it is acknowledged and nothing new is queued
    assert response["statusCode"] == 200
    assert len(inspect.messages("messages")) == before
    assert len(inspect.rows()) == 1


def test_the_same_event_in_other_bytes_is_another_delivery(door, inspect):
    # The key is the digest of the bytes: Meta's retries resend identical bytes, and a body
    # that differs by a space is, as far as the signature is concerned, another body.
    payload = whatsapp_message()
    door(post(json.dumps(payload).encode()), None)
    door(post(json.dumps(payload, indent=1).encode()), None)

    assert len(inspect.rows()) == 2


def test_unicode_and_emoji_bodies_verify_over_their_raw_bytes(door, inspect):
    # Given a body with non-ASCII text, sent unescaped exactly as Meta may send it
    raw = encode(whatsapp_message("olá 👋 — ¿qué tal? 你好"))

    # When it is posted with a signature over those bytes
    response = door(post(raw), None)

    # Then it verifies, and the row holds exactly those bytes
    assert response["statusCode"] == 200
    assert inspect.body(webhook.log_id(raw)) == raw
    [message] = inspect.messages("messages")
    assert (
        "👋"
        in Envelope.from_json(message["Body"]).payload["entry"][0]["changes"][0]["value"]["messages"][0]["text"]["body"]
    )


def test_a_signature_over_a_reserialized_body_does_not_verify(door, inspect):
    # Given the same event, but signed over its ASCII-escaped form while the unescaped form is sent
    payload = whatsapp_message("olá 👋")
    sent = json.dumps(payload, ensure_ascii=False).encode()
    signed = json.dumps(payload, ensure_ascii=True).encode()

    response = door(post(sent, signature=post(signed)["headers"]["x-hub-signature-256"]), None)

    assert response["statusCode"] == 403
    assert inspect.rows() == []


def test_base64_bodies_are_decoded_before_verifying_and_logged_as_sent(door, inspect):
    raw = encode(whatsapp_message("base64 ✓"))

    response = door(post(raw, as_base64=True), None)

    assert response["statusCode"] == 200
    assert inspect.body(webhook.log_id(raw)) == raw


def test_a_body_marked_base64_that_is_not_is_refused(door, inspect):
    event = post(b"{}")
    event.update(isBase64Encoded=True, body="not base64 at all!")

    response = door(event, None)

    assert response["statusCode"] == 400
    assert inspect.rows() == []


def test_large_bodies_are_compressed_and_travel_by_reference(door, inspect):
    # Given a delivery bigger than what travels inline (Meta batches up to 3 MB)
    payload = whatsapp_message("x" * (webhook.INLINE_BODY_LIMIT + 1000))
    raw = encode(payload)

    assert door(post(raw), None)["statusCode"] == 200

    # Then the row stores it compressed in the usual encoding, which it leaves unnamed, and the
    # message points at the row instead of carrying it
    row_id = webhook.log_id(raw)
    row = inspect.row(row_id)
    assert "body_encoding" not in row
    assert webhook_body.UNNAMED_ENCODING == webhook_body.META_DEFLATE
    assert len(row["body"]["B"]) < len(raw) / 10
    assert webhook_body.unpack(webhook_body.META_DEFLATE, [row["body"]["B"]]) == raw
    [message] = inspect.messages("messages")
    envelope = Envelope.from_json(message["Body"])
    assert (envelope.payload, envelope.ref) == (None, row_id)


def test_the_row_of_a_2_kb_whatsapp_text_fits_one_write_unit(door, inspect):
    # Given 2 KB WhatsApp texts of varied words (the cost scenario's), from one sender each
    empty = len(encode(whatsapp_message("")))
    for seed in range(30):
        raw = encode(whatsapp_message(varied_text(seed, 2048 - empty)))
        assert 2040 <= len(raw) <= 2048
        # When each is delivered
        assert door(post(raw), None)["statusCode"] == 200
        # Then its row, sender hash and expiry included, is at most the 1 KB of one write unit,
        # and reads back byte for byte
        row = inspect.row(webhook.log_id(raw))
        assert schema.SENDER_HASH in row
        assert schema.TTL in row
        assert item_size(row) <= 1024, (seed, item_size(row))
        assert inspect.body(webhook.log_id(raw)) == raw


def test_a_row_an_earlier_door_wrote_with_its_encoding_size_and_part_count_reads_back(inspect):
    raw = encode(whatsapp_message("order refund parcel " * 60))
    stored = webhook_body.pack(raw)
    inspect.put_row(
        {
            schema.ID: {"S": "wh-earlier"},
            "status": {"S": "queued"},
            "body": {"B": stored.parts[0]},
            "body_encoding": {"S": webhook_body.META_DEFLATE},
            "body_size": {"N": str(len(raw))},
            "body_parts": {"N": "1"},
        }
    )

    assert inspect.body("wh-earlier") == raw


def test_a_body_too_big_for_one_item_is_stored_whole_across_parts(door, inspect):
    # Given a 3 MB delivery that barely compresses (random text): far over DynamoDB's 400 KB item
    noise = base64.b64encode(os.urandom(2_200_000)).decode()
    raw = encode(whatsapp_message(noise))
    assert len(raw) <= 3 * 1024 * 1024

    # When it is delivered
    response = door(post(raw), None)

    # Then it is accepted, stored in parts, and reads back byte for byte
    assert response["statusCode"] == 200
    row_id = webhook.log_id(raw)
    assert int(inspect.row(row_id)["body_parts"]["N"]) > 1
    assert inspect.body(row_id) == raw
    [message] = inspect.messages("messages")
    assert Envelope.from_json(message["Body"]).ref == row_id


def test_a_multi_part_body_delivered_twice_keeps_one_row(door, inspect):
    raw = encode(whatsapp_message(base64.b64encode(os.urandom(600_000)).decode()))

    door(post(raw), None)
    door(post(raw), None)

    heads = [item for item in inspect.rows() if "part_of" not in item]
    assert [item["id"]["S"] for item in heads] == [webhook.log_id(raw)]
    assert len(inspect.messages("messages")) == 2


def test_oversize_bodies_are_refused_with_413_before_anything_is_stored(door, inspect, metrics):
    raw = b"{" + b" " * (3 * 1024 * 1024) + b"}"

    response = door(post(raw), None)

    assert response["statusCode"] == 413
    assert inspect.rows() == []
    emitted = metrics()
    assert ("WebhookRejected", {"Reason": "too_large"}) in emitted
    assert ("WebhookRejected", {"RejectedBy": "signature"}) not in emitted


def test_oversize_base64_bodies_are_refused_without_decoding(door, inspect):
    event = post(b"{}")
    event.update(isBase64Encoded=True, body="A" * (5 * 1024 * 1024))

    assert door(event, None)["statusCode"] == 413
    assert inspect.rows() == []


def test_the_delivery_id_is_the_correlation_id_of_its_log_lines(door, log_records):
    raw = encode(whatsapp_message())

    door(post(raw), None)

    enqueued = [r for r in log_records if r.getMessage() == "delivery enqueued"]
    assert [r.correlation_id for r in enqueued] == [webhook.log_id(raw)]
    assert enqueued[0].tenant == "102030405060"
    assert enqueued[0].outcome == "enqueued"


def test_other_methods_are_not_allowed(door):
    event = post(b"{}")
    event["requestContext"]["http"]["method"] = "PUT"

    response = door(event, None)

    assert response["statusCode"] == 405
    assert response["headers"]["allow"] == "GET, POST"
