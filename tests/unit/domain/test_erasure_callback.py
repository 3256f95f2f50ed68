"""The data-deletion callback's rules alone, on in-memory ports: a verified request becomes one
erasure named by the person's hash; a refused one asks for nothing; a full lane is 503."""

from __future__ import annotations

import pytest

from pipeline.domain import http
from pipeline.domain.erasure import requests as erasure
from pipeline.domain.erasure.callback import BUSY_RETRY_SECONDS, ErasureCallback, ErasureCallbackPorts
from pipeline.domain.erasure.signed_request import sign
from pipeline.domain.meta_secret import MetaSecrets, SecretsUnavailable
from pipeline.metric_names import ErasureFailure
from tests.unit.domain.door_ports import (
    APP_SECRET,
    NOW,
    VERIFY_TOKEN,
    Erasures,
    Hasher,
    Links,
    Secrets,
    Telemetry,
    body_of,
)
from tests.unit.privacy.conftest import deletion_callback, erasure_status, meta_payload


class Callback:
    def __init__(self) -> None:
        self.secrets, self.senders, self.requests, self.links = Secrets(), Hasher(), Erasures(), Links()
        self.telemetry = Telemetry()

    def __call__(self, event: dict) -> http.Reply:
        ports = ErasureCallbackPorts(
            secrets=self.secrets, senders=self.senders, requests=self.requests, links=self.links
        )
        rules = ErasureCallback(16 * 1024, ports, self.telemetry, lambda: NOW, max_age_seconds=MAX_AGE)
        return rules.answer(http.HttpRequest.from_event(event))


MAX_AGE = 300


@pytest.fixture
def callback() -> Callback:
    return Callback()


def test_a_signed_request_becomes_one_erasure_of_the_persons_hash_and_its_status_link(callback):
    reply = callback(deletion_callback(sign(meta_payload("10223344"), APP_SECRET)))

    assert reply.status == 200
    assert callback.requests.requested == [("hash-of-10223344", erasure.META)]
    answer = body_of(reply)
    assert answer["url"] == f"https://api.example.test{erasure.CALLBACK_PATH}/{answer['confirmation_code']}"


@pytest.mark.parametrize(
    ("signed", "status"), [(None, 401), ("not.signed", 401), (sign(meta_payload("10223344"), "forged"), 403)]
)
def test_a_request_not_signed_by_the_app_asks_for_nothing(callback, signed, status):
    reply = callback(deletion_callback(signed))

    assert reply.status == status
    assert (callback.senders.asked, callback.requests.requested) == ([], [])


def test_a_request_signed_with_a_secret_read_since_is_accepted_after_one_early_read(callback):
    callback.secrets.newer = MetaSecrets("rotated-secret", VERIFY_TOKEN)

    reply = callback(deletion_callback(sign(meta_payload("10223344"), "rotated-secret")))

    assert reply.status == 200
    assert callback.secrets.refreshes == 1


def test_a_full_erasure_lane_is_503_with_a_retry_after(callback):
    callback.requests.busy = True

    reply = callback(deletion_callback(sign(meta_payload("10223344"), APP_SECRET)))

    assert (reply.status, reply.headers["retry-after"]) == (503, str(BUSY_RETRY_SECONDS))
    assert ("ErasureRefused", {"Reason": "busy"}) in callback.telemetry.counts


@pytest.mark.parametrize("broken", ["meta secret", "sender key"])
def test_an_unreadable_secret_is_raised_as_a_500_and_asks_for_nothing(callback, broken):
    if broken == "meta secret":
        callback.secrets.error = SecretsUnavailable("throttled")
    else:
        callback.senders.unavailable = True

    with pytest.raises(http.Failed) as raised:
        callback(deletion_callback(sign(meta_payload("10223344"), APP_SECRET)))

    assert raised.value.reason == ErasureFailure.SECRETS_UNAVAILABLE
    assert callback.requests.requested == []


def test_the_status_page_shows_a_known_code_and_never_asks_about_a_malformed_one(callback):
    code = "0" * 31 + "1"
    callback.requests.statuses[code] = {"status": "pending"}

    known = callback(erasure_status(code))
    malformed = callback(erasure_status("../jobs"))

    assert (known.status, body_of(known)) == (200, {"status": "pending"})
    assert malformed.status == 404
    assert callback.requests.status_reads == 1


@pytest.mark.parametrize(
    ("issued_at", "why"),
    [
        (NOW - MAX_AGE - 1, "older than the limit"),
        (NOW + 120, "issued in the future, past any clock skew"),
        (None, "no issued_at to tell its age by"),
    ],
)
def test_a_stale_signed_request_is_refused_and_asks_for_nothing(callback, issued_at, why):
    payload = {**meta_payload("10223344"), "issued_at": issued_at}
    if issued_at is None:
        del payload["issued_at"]

    reply = callback(deletion_callback(sign(payload, APP_SECRET)))

    assert reply.status == 403, why
    assert body_of(reply)["message"] == "signed request stale"
    assert (callback.senders.asked, callback.requests.requested) == ([], [])
    assert ("ErasureRefused", {"Reason": "signed_request_stale"}) in callback.telemetry.counts


def test_a_signed_request_within_the_limit_is_taken(callback):
    payload = {**meta_payload("10223344"), "issued_at": NOW - MAX_AGE + 5}

    assert callback(deletion_callback(sign(payload, APP_SECRET))).status == 200


def test_the_app_scoped_id_is_erased_with_every_id_linked_to_it(callback):
    # Given the product linked Meta's app-scoped id to the person's WhatsApp number and page-scoped id
    callback.links.linked["hash-of-10223344"] = ("hash-of-447700900123", "hash-of-6012345")

    callback(deletion_callback(sign(meta_payload("10223344"), APP_SECRET)))

    # Then one erasure is asked for, of the app-scoped id and of both linked ids
    assert callback.requests.requested == [("hash-of-10223344", erasure.META)]
    assert callback.requests.linked == [("hash-of-447700900123", "hash-of-6012345")]


def test_freshness_is_measured_from_issued_at_up_to_the_limit_itself():
    from pipeline.domain.erasure.signed_request import Refused, SignedRequest, check_fresh

    check_fresh(SignedRequest("1", NOW - MAX_AGE), now=NOW, max_age_seconds=MAX_AGE)
    check_fresh(SignedRequest("1", NOW + 60), now=NOW, max_age_seconds=MAX_AGE)  # a clock a minute ahead
    for stale in (NOW - MAX_AGE - 0.5, NOW + 61):
        with pytest.raises(Refused):
            check_fresh(SignedRequest("1", stale), now=NOW, max_age_seconds=MAX_AGE)
