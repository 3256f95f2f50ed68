"""Reading API Gateway events: bodies back to the exact bytes sent, capped before decoding."""

from __future__ import annotations

import base64

import pytest

from pipeline.domain.http import BodyTooLarge, BodyUndecodable, HttpRequest
from tests.support.aws import http_api_event


def _request(**kwargs) -> HttpRequest:
    return HttpRequest.from_event(http_api_event("POST", "/x", **kwargs))


def test_text_bodies_are_their_utf8_bytes():
    assert _request(body="héllo 👋").body_bytes(100) == "héllo 👋".encode()


def test_base64_bodies_are_decoded():
    raw = bytes(range(256))

    assert _request(body=base64.b64encode(raw).decode(), is_base64=True).body_bytes(1000) == raw


def test_the_cap_is_on_bytes_not_characters():
    with pytest.raises(BodyTooLarge):
        _request(body="👋" * 30).body_bytes(100)  # 30 characters, 120 bytes


def test_a_body_exactly_at_the_cap_is_accepted():
    assert len(_request(body="a" * 100).body_bytes(100)) == 100
    raw = b"b" * 100
    assert _request(body=base64.b64encode(raw).decode(), is_base64=True).body_bytes(100) == raw


def test_invalid_base64_is_undecodable():
    with pytest.raises(BodyUndecodable):
        _request(body="***", is_base64=True).body_bytes(100)


def test_lone_surrogates_cannot_be_what_was_signed():
    with pytest.raises(BodyUndecodable):
        _request(body="a\ud800b").body_bytes(100)


def test_header_names_are_case_insensitive_and_a_missing_body_is_empty():
    request = HttpRequest.from_event(
        {"headers": {"X-Hub-Signature-256": "v"}, "requestContext": {"http": {"method": "post"}}}
    )

    assert request.headers["x-hub-signature-256"] == "v"
    assert request.method == "POST"
    assert request.body_bytes(10) == b""


def test_repeated_query_parameters_are_kept_apart():
    request = _request(raw_query="a=1&a=2&b=", query={"a": "1,2", "b": ""})

    assert request.query_values() == {"a": ["1", "2"], "b": [""]}
