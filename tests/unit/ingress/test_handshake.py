"""Meta's subscription check: the challenge echoed exactly, to the right token only."""

from __future__ import annotations

from urllib.parse import urlencode

import pytest

from pipeline.domain.webhook import delivery as webhook
from tests.support.aws import META_VERIFY_TOKEN, http_api_event
from tests.unit.ingress.conftest import PATH


def _get(params: list[tuple[str, str]]) -> dict:
    return http_api_event("GET", PATH, raw_query=urlencode(params), query=dict(params))


def test_the_right_token_gets_the_challenge_back_as_plain_text(door):
    response = door(
        _get([("hub.mode", "subscribe"), ("hub.verify_token", META_VERIFY_TOKEN), ("hub.challenge", "1158201444")]),
        None,
    )

    assert response["statusCode"] == 200
    assert response["body"] == "1158201444"
    assert response["headers"]["content-type"].startswith("text/plain")
    assert response["isBase64Encoded"] is False


def test_the_challenge_is_echoed_exactly_even_when_it_needs_url_decoding(door):
    challenge = "a b+c/ü"

    response = door(
        _get([("hub.mode", "subscribe"), ("hub.verify_token", META_VERIFY_TOKEN), ("hub.challenge", challenge)]), None
    )

    assert response["body"] == challenge


def test_query_parameters_without_a_raw_query_string_also_work(door):
    params = {"hub.mode": "subscribe", "hub.verify_token": META_VERIFY_TOKEN, "hub.challenge": "42"}

    response = door(http_api_event("GET", PATH, query=params), None)

    assert (response["statusCode"], response["body"]) == (200, "42")


REFUSED = {
    "wrong-token": [("hub.mode", "subscribe"), ("hub.verify_token", "wrong"), ("hub.challenge", "1")],
    "token-prefix": [("hub.mode", "subscribe"), ("hub.verify_token", META_VERIFY_TOKEN[:-1]), ("hub.challenge", "1")],
    "wrong-mode": [("hub.mode", "unsubscribe"), ("hub.verify_token", META_VERIFY_TOKEN), ("hub.challenge", "1")],
    "no-mode": [("hub.verify_token", META_VERIFY_TOKEN), ("hub.challenge", "1")],
    "no-token": [("hub.mode", "subscribe"), ("hub.challenge", "1")],
    "no-challenge": [("hub.mode", "subscribe"), ("hub.verify_token", META_VERIFY_TOKEN)],
    "empty-challenge": [("hub.mode", "subscribe"), ("hub.verify_token", META_VERIFY_TOKEN), ("hub.challenge", "")],
    "challenge-too-long": [
        ("hub.mode", "subscribe"),
        ("hub.verify_token", META_VERIFY_TOKEN),
        ("hub.challenge", "9" * 513),
    ],
    "repeated-token": [
        ("hub.mode", "subscribe"),
        ("hub.verify_token", "wrong"),
        ("hub.verify_token", META_VERIFY_TOKEN),
        ("hub.challenge", "1"),
    ],
    "nothing": [],
}


@pytest.mark.parametrize("params", REFUSED.values(), ids=REFUSED.keys())
def test_each_refused_handshake_is_recognised(params):
    query: dict[str, list[str]] = {}
    for name, value in params:
        query.setdefault(name, []).append(value)
    assert webhook.handshake(query, META_VERIFY_TOKEN) is None


def test_anything_else_is_403_and_says_nothing(door):
    for case, params in REFUSED.items():
        response = door(_get(params), None)

        assert response["statusCode"] == 403, case
        assert response["body"] == "", case
