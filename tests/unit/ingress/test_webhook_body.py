"""Storing raw bodies: compressed when it pays, split when it must, always whole on the way back."""

from __future__ import annotations

import os

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pipeline.domain import webhook_body


@given(raw=st.binary(max_size=5000))
def test_any_body_round_trips(raw):
    stored = webhook_body.pack(raw)
    assert webhook_body.unpack(stored.encoding, stored.parts) == raw
    assert stored.size == len(raw)


def test_small_bodies_are_stored_as_they_are():
    stored = webhook_body.pack(b'{"a": 1}')

    assert (stored.encoding, stored.parts) == (webhook_body.IDENTITY, (b'{"a": 1}',))


def test_compressible_bodies_are_gzipped_deterministically():
    raw = b'{"text": "' + b"hello " * 1000 + b'"}'

    first, second = webhook_body.pack(raw), webhook_body.pack(raw)

    assert first.encoding == webhook_body.GZIP
    assert first.stored_bytes < len(raw) / 10
    assert first == second


def test_incompressible_bodies_are_kept_raw():
    raw = os.urandom(4096)

    assert webhook_body.pack(raw).encoding == webhook_body.IDENTITY


@settings(max_examples=5, deadline=None)
@given(size=st.integers(min_value=webhook_body.PART_BYTES + 1, max_value=webhook_body.MAX_LOGGABLE_BYTES))
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
