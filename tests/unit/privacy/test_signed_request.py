"""Meta's signed_request, on its own: what is accepted, and why everything else is refused."""

from __future__ import annotations

import base64
import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pipeline.domain.erasure import signed_request
from pipeline.domain.erasure.signed_request import Refusal, Refused

SECRET = b"app-secret"
PREVIOUS = b"previous-app-secret"
PAYLOAD = {"algorithm": "HMAC-SHA256", "user_id": "10203040", "issued_at": 1_800_000_000, "expires": 0}


def _refusal(signed: str, keys=(SECRET,)) -> Refusal:
    with pytest.raises(Refused) as refused:
        signed_request.verify(signed, keys)
    return refused.value.refusal


def test_a_request_meta_signed_names_the_user():
    verified = signed_request.verify(signed_request.sign(PAYLOAD, SECRET), [SECRET])

    assert verified == signed_request.SignedRequest(user_id="10203040", issued_at=1_800_000_000.0)


def test_a_request_signed_with_the_previous_secret_in_force_is_accepted():
    assert signed_request.verify(signed_request.sign(PAYLOAD, PREVIOUS), [SECRET, PREVIOUS]).user_id == "10203040"


def test_a_forged_or_tampered_request_is_a_mismatch():
    genuine = signed_request.sign(PAYLOAD, SECRET)
    signature, _ = genuine.split(".")
    other = base64.urlsafe_b64encode(json.dumps({**PAYLOAD, "user_id": "999"}).encode()).rstrip(b"=").decode()

    assert _refusal(signed_request.sign(PAYLOAD, b"guessed")) is Refusal.MISMATCH
    assert _refusal(f"{signature}.{other}") is Refusal.MISMATCH  # someone else's id under Meta's signature
    assert _refusal(genuine, keys=(b"",)) is Refusal.MISMATCH  # no secret set: nothing verifies
    assert Refusal.MISMATCH.status == 403


@pytest.mark.parametrize(
    "signed",
    ["", "no-dot", "a.b.c", ".payload", "sig.", "not*base64.eyJ9", "c2hvcnQ.eyJ9", "x" * 9000],
    ids=["empty", "no-dot", "two-dots", "no-signature", "no-payload", "bad-alphabet", "short-signature", "huge"],
)
def test_a_malformed_request_is_refused_before_any_secret_is_used(signed):
    assert _refusal(signed, keys=()) is Refusal.MALFORMED
    assert Refusal.MALFORMED.status == 401


def test_a_signed_request_it_cannot_act_on_is_unsupported():
    for payload in ({**PAYLOAD, "algorithm": "HMAC-SHA1"}, {"algorithm": "HMAC-SHA256"}, {**PAYLOAD, "user_id": True}):
        assert _refusal(signed_request.sign(payload, SECRET)) is Refusal.UNSUPPORTED


def test_the_field_is_read_from_the_form_meta_posts():
    signed = signed_request.sign(PAYLOAD, SECRET)

    assert signed_request.from_form(f"signed_request={signed}".encode()) == signed
    with pytest.raises(Refused) as missing:
        signed_request.from_form(b"other=1")
    assert missing.value.refusal is Refusal.MISSING
    with pytest.raises(Refused) as twice:
        signed_request.from_form(f"signed_request={signed}&signed_request={signed}".encode())
    assert twice.value.refusal is Refusal.MALFORMED


@given(st.text(max_size=300))
def test_no_text_but_a_signed_one_is_accepted(text):
    with pytest.raises(Refused):
        signed_request.verify(text, [SECRET])
