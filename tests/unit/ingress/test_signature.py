"""HMAC verification over raw bytes, as properties: every correctly signed body verifies under
either configured secret, and any change to the body, the secret or the digest is refused."""

from __future__ import annotations

import hashlib
import hmac

from hypothesis import given
from hypothesis import strategies as st

from pipeline.domain.signature import HEX_LENGTH, PREFIX, SignatureCheck, sign, verify

secrets = st.binary(min_size=1, max_size=64)
bodies = st.binary(max_size=2048)


@given(body=bodies, secret=secrets)
def test_a_body_signed_with_the_secret_verifies(body, secret):
    assert verify(body, sign(secret, body), [secret]) is SignatureCheck.VALID


@given(body=bodies, current=secrets, previous=secrets)
def test_either_configured_secret_verifies(body, current, previous):
    assert verify(body, sign(previous, body), [current, previous]) is SignatureCheck.VALID
    assert verify(body, sign(current, body), [current, previous]) is SignatureCheck.VALID


@given(body=bodies, secret=secrets, other=secrets)
def test_another_secret_does_not_verify(body, secret, other):
    if other != secret:
        assert verify(body, sign(other, body), [secret]) is SignatureCheck.MISMATCH


@given(body=bodies, other=bodies, secret=secrets)
def test_a_signature_for_other_bytes_does_not_verify(body, other, secret):
    if other != body:
        assert verify(other, sign(secret, body), [secret]) is SignatureCheck.MISMATCH


@given(
    body=bodies,
    secret=secrets,
    index=st.integers(min_value=0, max_value=HEX_LENGTH - 1),
    digit=st.sampled_from("0123456789abcdef"),
)
def test_any_single_hex_digit_changed_does_not_verify(body, secret, index, digit):
    good = sign(secret, body)
    hex_part = good[len(PREFIX) :]
    changed = hex_part[:index] + digit + hex_part[index + 1 :]
    expected = SignatureCheck.VALID if changed == hex_part else SignatureCheck.MISMATCH
    assert verify(body, PREFIX + changed, [secret]) is expected


@given(text=st.text(max_size=200))
def test_unicode_text_is_verified_over_its_utf8_bytes(text):
    raw = text.encode("utf-8")
    expected = "sha256=" + hmac.new(b"k", raw, hashlib.sha256).hexdigest()
    assert verify(raw, expected, [b"k"]) is SignatureCheck.VALID


@given(header=st.text(max_size=100))
def test_arbitrary_headers_never_verify_and_never_raise(header):
    result = verify(b"body", header, [b"secret"])
    assert result is not SignatureCheck.VALID


@given(body=bodies, secret=secrets, length=st.integers(min_value=0, max_value=130))
def test_hex_of_the_wrong_length_is_malformed(body, secret, length):
    if length != HEX_LENGTH:
        assert verify(body, PREFIX + "a" * length, [secret]) is SignatureCheck.MALFORMED


def test_missing_and_blank_headers_are_missing():
    assert verify(b"x", None, [b"s"]) is SignatureCheck.MISSING
    assert verify(b"x", "   ", [b"s"]) is SignatureCheck.MISSING


def test_no_usable_secret_verifies_nothing():
    assert verify(b"x", sign(b"", b"x"), [b""]) is SignatureCheck.MISMATCH
