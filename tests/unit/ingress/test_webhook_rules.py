"""The door's pure rules: log ids, what parses, what travels inline."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from pipeline.domain.envelope import Envelope
from pipeline.domain.webhook import delivery as webhook
from pipeline.domain.webhook.delivery import Unparseable
from pipeline.domain.webhook.routing import Route
from tests.support import meta_deliveries

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=20,
)


def test_the_log_id_is_a_digest_of_the_exact_bytes():
    assert webhook.log_id(b"{}") == webhook.log_id(b"{}")
    assert webhook.log_id(b"{}") != webhook.log_id(b"{ }")
    assert webhook.log_id(b"{}").startswith("wh-")
    assert len(webhook.log_id(b"{}")) == 3 + 64


@given(payload=st.dictionaries(st.text(max_size=8), json_values, max_size=5))
def test_any_json_object_within_the_depth_limit_parses_back_to_itself(payload):
    raw = json.dumps(payload, ensure_ascii=False).encode()
    parsed = webhook.parse(raw, max_depth=64)
    assert parsed.problem is None
    assert parsed.payload == payload


@given(raw=st.binary(max_size=200))
def test_arbitrary_bytes_never_raise(raw):
    parsed = webhook.parse(raw, max_depth=8)
    assert (parsed.payload is None) == (parsed.problem is not None)


def test_depth_counts_the_top_level_object_as_one():
    assert webhook.parse(b'{"a": {"b": {}}}', max_depth=3).problem is None
    assert webhook.parse(b'{"a": {"b": {}}}', max_depth=2).problem is Unparseable.TOO_DEEP
    assert webhook.parse(b'{"a": [[1]]}', max_depth=2).problem is Unparseable.TOO_DEEP


def test_brackets_inside_strings_do_not_make_a_shallow_body_too_deep():
    # Given a body two levels deep whose texts hold far more brackets than the limit
    raw = b'{"a": {"text": "[[[[{{{{"}, "b": ["]]]]}}}}"]}'
    # When it is parsed with a limit below its bracket count, then only its real nesting counts
    assert webhook.parse(raw, max_depth=2).problem is None
    assert webhook.parse(raw, max_depth=1).problem is Unparseable.TOO_DEEP


def test_bodies_sqs_cannot_carry_travel_by_reference():
    for raw in (b'{"a": "\\uffff"}', b'{"a": "\\ud800"}', '{"a": "\ufffe"}'.encode()):
        parsed = webhook.parse(raw, max_depth=8)
        assert parsed.problem is None
        assert parsed.inline_safe is False
        envelope = webhook.envelope("wh-1", Route("messages", "t", "k"), parsed, 1.0)
        assert (envelope.payload, envelope.ref) == (None, "wh-1")


def test_ordinary_emoji_travel_inline():
    parsed = webhook.parse('{"a": "👋"}'.encode(), max_depth=8)

    assert parsed.inline_safe is True
    assert webhook.envelope("wh-1", Route("messages", "t", "k"), parsed, 1.0).payload == {"a": "👋"}


def test_handshake_needs_mode_token_and_challenge_exactly_once():
    good = {"hub.mode": ["subscribe"], "hub.verify_token": ["tok"], "hub.challenge": ["123"]}
    assert webhook.handshake(good, "tok") == "123"
    assert webhook.handshake(good, "") is None
    assert webhook.handshake({**good, "hub.challenge": ["1", "2"]}, "tok") is None
    assert webhook.handshake({**good, "hub.verify_token": ["TOK"]}, "tok") is None


def test_a_challenge_of_exactly_512_characters_is_echoed_and_513_is_not():
    query = {"hub.mode": ["subscribe"], "hub.verify_token": ["tok"]}

    assert webhook.handshake({**query, "hub.challenge": ["9" * 512]}, "tok") == "9" * 512
    assert webhook.handshake({**query, "hub.challenge": ["9" * 513]}, "tok") is None


def test_a_token_holding_a_lone_surrogate_is_refused_without_raising():
    # Given a token that no UTF-8 text could spell (a JSON event may carry "\udcff")
    query = {"hub.mode": ["subscribe"], "hub.verify_token": ["tok\udcff"], "hub.challenge": ["1"]}

    # Then it is compared like any other wrong token
    assert webhook.handshake(query, "tok") is None


def test_a_body_exactly_at_the_inline_limit_travels_inline_and_one_byte_more_does_not():
    padding = webhook.INLINE_BODY_LIMIT - len(b'{"a":""}')
    at_limit = b'{"a":"' + b"x" * padding + b'"}'
    over = b'{"a":"' + b"x" * (padding + 1) + b'"}'

    assert len(at_limit) == webhook.INLINE_BODY_LIMIT
    assert webhook.parse(at_limit, max_depth=8).inline_safe is True
    assert webhook.parse(over, max_depth=8).inline_safe is False


@given(delivery=meta_deliveries.deliveries, received_at=st.floats(min_value=1.6e9, max_value=1.9e9))
def test_a_meta_delivery_travels_inline_in_an_envelope_of_its_route(delivery, received_at):
    # Given a Meta-shaped delivery as Meta's bytes (UTF-8, not escaped)
    raw = json.dumps(delivery.payload, ensure_ascii=False).encode()
    row_id = webhook.log_id(raw)

    parsed = webhook.parse(raw, max_depth=16)
    envelope = webhook.envelope(row_id, delivery.route, parsed, received_at)

    # Then it parses back to itself and travels inline, named by its row, on its route
    assert (parsed.payload, parsed.problem, parsed.inline_safe) == (delivery.payload, None, True)
    assert envelope == Envelope(
        id=row_id,
        lane=delivery.route.lane,
        tenant=delivery.route.tenant,
        kind=delivery.route.kind,
        source="webhook",
        created_at=received_at,
        payload=delivery.payload,
        ref=None,
    )


@given(delivery=meta_deliveries.deliveries)
def test_an_escaped_character_outside_the_bmp_sends_a_meta_delivery_by_reference(delivery):
    # Given the delivery with every non-ASCII character escaped, as Meta sends it: a character past
    # U+FFFF becomes a surrogate pair escape, which the parser would turn into what SQS refuses
    raw = json.dumps(delivery.payload).encode()
    beyond_bmp = any(ord(char) > 0xFFFF for char in json.dumps(delivery.payload, ensure_ascii=False))

    parsed = webhook.parse(raw, max_depth=16)
    envelope = webhook.envelope("wh-1", delivery.route, parsed, 1.0)

    # Then it still parses to the same payload, and travels inline exactly when no such escape is in it
    assert parsed.payload == delivery.payload
    assert parsed.inline_safe is not beyond_bmp
    assert (envelope.payload, envelope.ref) == ((None, "wh-1") if beyond_bmp else (delivery.payload, None))
