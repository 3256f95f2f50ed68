"""Who may post: only bodies signed with the app secret (or the previous one, during rotation)."""

from __future__ import annotations

import pytest

from pipeline.domain.signature import SignatureCheck, sign, verify
from tests.support.aws import META_APP_SECRET, META_PREVIOUS_APP_SECRET
from tests.unit.ingress.conftest import encode, post, whatsapp_message

RAW = encode(whatsapp_message())
GOOD = sign(META_APP_SECRET, RAW)


BAD_SIGNATURES = {
    "missing": (None, 401, "signature_missing"),
    "empty": ("", 401, "signature_missing"),
    "sha1-prefix": ("sha1=" + GOOD.removeprefix("sha256=")[:40], 401, "signature_malformed"),
    "upper-case-prefix": ("SHA256=" + GOOD.removeprefix("sha256="), 401, "signature_malformed"),
    "no-prefix": (GOOD.removeprefix("sha256="), 401, "signature_malformed"),
    "hex-too-short": (GOOD[:-1], 401, "signature_malformed"),
    "hex-too-long": (GOOD + "0", 401, "signature_malformed"),
    "not-hex": (GOOD[:-2] + "zz", 401, "signature_malformed"),
    "two-values": (GOOD + "," + GOOD, 401, "signature_malformed"),
    "other-secret": (sign("someone-else", RAW), 403, "signature_mismatch"),
    "other-bytes": (sign(META_APP_SECRET, RAW + b" "), 403, "signature_mismatch"),
}


@pytest.mark.parametrize(("header", "status", "reason"), BAD_SIGNATURES.values(), ids=BAD_SIGNATURES.keys())
def test_each_bad_signature_is_classified(header, status, reason):
    # The door's answer for each fault: 401 for no usable signature, 403 for a wrong one
    check = verify(RAW, header, [META_APP_SECRET.encode(), META_PREVIOUS_APP_SECRET.encode()])
    assert check.value == reason
    assert (403 if check is SignatureCheck.MISMATCH else 401) == status


def test_bad_signatures_are_refused_and_nothing_is_stored(door, inspect, metrics):
    # When deliveries arrive with each kind of bad signature (one deployment for the whole table)
    for case, (header, status, reason) in BAD_SIGNATURES.items():
        response = door(post(RAW, signature=header), None)

        # Then each is refused with the status for its fault, counted by reason and as a refused
        # signature (the series the rejected-signatures alarm watches)
        assert response["statusCode"] == status, case
        emitted = metrics()
        assert ("WebhookRejected", {"Reason": reason}) in emitted, case
        assert ("WebhookRejected", {"RejectedBy": "signature"}) in emitted, case

    # And none was logged or queued
    assert inspect.rows() == []
    assert inspect.messages("messages") == []


def test_a_delivery_signed_with_the_previous_secret_is_accepted_during_rotation(door, inspect):
    response = door(post(RAW, secret=META_PREVIOUS_APP_SECRET), None)

    assert response["statusCode"] == 200
    assert len(inspect.messages("messages")) == 1


def test_upper_case_hex_is_the_same_signature(door):
    header = "sha256=" + GOOD.removeprefix("sha256=").upper()

    assert door(post(RAW, signature=header), None)["statusCode"] == 200


def test_a_signed_empty_body_is_logged_as_unparseable(door, inspect):
    response = door(post(b""), None)

    assert response["statusCode"] == 200
    [row] = inspect.rows()
    assert row["status"]["S"] == "unparseable"
