"""Storing raw bodies: compressed when it pays, split when it must, always whole on the way back."""

from __future__ import annotations

import gzip
import os

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pipeline.domain.webhook import body as webhook_body
from pipeline.settings.doors import MAX_LOGGABLE_BYTES


@given(raw=st.binary(max_size=5000))
def test_any_body_round_trips(raw):
    stored = webhook_body.pack(raw)
    assert webhook_body.unpack(stored.encoding, stored.parts) == raw
    assert stored.size == len(raw)


def test_small_bodies_are_stored_as_they_are():
    stored = webhook_body.pack(b'{"a": 1}')

    assert (stored.encoding, stored.parts) == (webhook_body.IDENTITY, (b'{"a": 1}',))


def test_compressible_bodies_are_deflated_deterministically():
    raw = b'{"text": "' + b"hello " * 1000 + b'"}'

    first, second = webhook_body.pack(raw), webhook_body.pack(raw)

    assert first.encoding == webhook_body.META_DEFLATE
    assert first.stored_bytes < len(raw) / 10
    assert first == second


def test_a_2_kb_whatsapp_text_is_stored_in_under_800_bytes():
    # Given a 2 KB WhatsApp delivery whose text is varied words, not one repeated phrase
    words = ("order", "refund", "parcel", "driver", "tuesday", "invoice", "card", "colour", "jacket", "courier")
    text = " ".join(words[(n * 7) % len(words)] + str(n % 13) for n in range(220))
    raw = (
        '{"object":"whatsapp_business_account","entry":[{"id":"102030405060","changes":[{"value":'
        '{"messaging_product":"whatsapp","metadata":{"display_phone_number":"15550001111","phone_number_id":'
        '"106540352242922"},"contacts":[{"profile":{"name":"Ada"},"wa_id":"447700900123"}],"messages":[{"from":'
        '"447700900123","id":"wamid.HBgLNDQ3NzAwOTAwMTIzFQIAEhgUM0VCMDRBMEZBQjQ4","timestamp":"1764547200",'
        f'"text":{{"body":"{text}"}},"type":"text"}}]}},"field":"messages"}}]}}]}}'
    ).encode()[:2048]
    # When it is packed
    stored = webhook_body.pack(raw)
    # Then Meta's field names cost next to nothing, and it comes back byte for byte
    assert stored.stored_bytes < 800
    assert webhook_body.unpack(stored.encoding, stored.parts) == raw


def test_rows_gzipped_before_the_dictionary_stay_readable():
    raw = b'{"object": "page", "entry": []}' * 40

    assert webhook_body.unpack(webhook_body.GZIP, [gzip.compress(raw, mtime=0)]) == raw


def test_incompressible_bodies_are_kept_raw():
    raw = os.urandom(4096)

    assert webhook_body.pack(raw).encoding == webhook_body.IDENTITY


@settings(max_examples=5, deadline=None)
@given(size=st.integers(min_value=webhook_body.PART_BYTES + 1, max_value=MAX_LOGGABLE_BYTES))
def test_bodies_up_to_the_loggable_maximum_fit_in_parts_under_the_item_limit(size):
    stored = webhook_body.pack(os.urandom(size))

    assert len(stored.parts) <= webhook_body.MAX_PARTS
    assert all(len(part) <= webhook_body.PART_BYTES for part in stored.parts)


def test_a_body_beyond_the_loggable_maximum_is_refused_not_truncated():
    with pytest.raises(webhook_body.BodyDoesNotFit):
        webhook_body.pack(os.urandom(webhook_body.MAX_PARTS * webhook_body.PART_BYTES + 1))


def test_unknown_encodings_are_an_error():
    with pytest.raises(ValueError, match="unknown body encoding"):
        webhook_body.unpack("br", [b""])
