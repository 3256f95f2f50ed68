"""The door's pure rules: log ids, what parses, what travels inline."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from pipeline.domain import webhook
from pipeline.domain.routing import Route
from pipeline.domain.webhook import Unparseable

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
