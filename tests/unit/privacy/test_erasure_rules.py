"""The erasure's rules on their own: the job a request becomes, what its holder is shown, and what
is left of a row once the person is erased from it."""

from __future__ import annotations

import time

import pytest

from pipeline import schema
from pipeline.domain.erasure import requests as erasure
from pipeline.domain.jobs import requests as jobs
from pipeline.domain.jobs.requests import Job

HASH = "0123456789abcdef0123456789abcdef"
CODE = "fedcba9876543210fedcba9876543210"
REQUESTED = 1_767_225_600.0  # 2026-01-01T00:00:00Z
FINISHED = REQUESTED + 41.9


def _job(status: str, result: dict[str, int] | None = None) -> Job:
    return Job(
        id=erasure.job_id(CODE),
        lane=erasure.LANE,
        kind=erasure.KIND,
        tenant=erasure.TENANT,
        status=status,
        attempts=1,
        deferrals=0,
        created_at=REQUESTED,
        updated_at=FINISHED,
        deadline=None,
        last_error=None,
        result=result,
    )


def test_a_request_is_a_job_of_the_privacy_tenant_due_by_its_own_deadline():
    job = erasure.request(HASH, erasure.META, now=REQUESTED, deadline_seconds=86_400)

    assert (job.lane, job.kind, job.tenant) == ("bulk", "privacy.erase", "privacy")
    assert job.payload == {"sender_hash": HASH, "requested_by": "meta"}
    assert job.deadline == REQUESTED + 86_400
    assert job.idempotency_key is None
    # Its id is the one the code names within the privacy tenant, and holds nothing of the code
    assert erasure.job_id(CODE) == jobs.job_id("privacy", CODE)
    assert CODE not in erasure.job_id(CODE)


def test_a_request_from_anyone_but_meta_or_on_call_is_refused_naming_who_may_ask():
    with pytest.raises(ValueError, match=r"requested_by must be one of \('meta', 'operator'\)"):
        erasure.request(HASH, "producer", now=REQUESTED, deadline_seconds=60)


def test_a_pending_erasure_shows_when_it_was_asked_for_and_nothing_else_yet():
    assert erasure.public_status(CODE, _job(schema.RowStatus.QUEUED)) == {
        "confirmation_code": CODE,
        "status": "pending",
        "requested_at": "2026-01-01T00:00:00Z",
        "completed_at": None,
        "erased": None,
    }


def test_times_are_shown_in_utc_whatever_the_machines_zone(monkeypatch):
    monkeypatch.setenv("TZ", "IST-5:30")  # POSIX form: needs no zone database
    time.tzset()
    try:
        shown = erasure.public_status(CODE, _job(schema.RowStatus.DONE))
    finally:
        monkeypatch.undo()
        time.tzset()
    assert (shown["requested_at"], shown["completed_at"]) == ("2026-01-01T00:00:00Z", "2026-01-01T00:00:41Z")


def test_a_done_erasure_shows_when_it_finished_and_how_much_went():
    counted = {"webhook_rows": 3, "items": 2}

    shown = erasure.public_status(CODE, _job(schema.RowStatus.DONE, counted))

    assert (shown["status"], shown["completed_at"], shown["erased"]) == ("done", "2026-01-01T00:00:41Z", counted)


@pytest.mark.parametrize("counted", [None, {}, {"webhook_rows": 0, "items": 0}])
def test_a_done_erasure_that_found_nothing_says_no_data_held_not_done(counted):
    shown = erasure.public_status(CODE, _job(schema.RowStatus.DONE, counted))

    assert (shown["status"], shown["completed_at"], shown["erased"]) == ("no_data_held", "2026-01-01T00:00:41Z", None)


def test_a_request_with_linked_ids_names_each_once_after_the_one_asked_for():
    other, third = "1" * 32, "2" * 32

    job = erasure.request(HASH, erasure.META, now=REQUESTED, deadline_seconds=60, linked=[other, HASH, third, other])

    assert job.payload == {"sender_hash": HASH, "requested_by": "meta", "linked": [other, third]}
    with pytest.raises(ValueError, match="at most 50 linked ids"):
        erasure.request(HASH, erasure.META, now=REQUESTED, deadline_seconds=60, linked=[f"{n:032x}" for n in range(51)])


def test_a_code_is_derived_under_the_key_from_the_person_and_the_nonce():
    code = erasure.code_for(b"k" * 32, HASH, "nonce-1")

    assert erasure.is_code(code)
    assert code == erasure.code_for(b"k" * 32, HASH, "nonce-1")
    assert len({code, erasure.code_for(b"j" * 32, HASH, "nonce-1"), erasure.code_for(b"k" * 32, HASH, "nonce-2")}) == 3


@pytest.mark.parametrize("status", [schema.RowStatus.FAILED, schema.RowStatus.EXPIRED, schema.RowStatus.ABANDONED])
def test_an_erasure_that_did_not_finish_shows_failed_and_no_counts(status):
    shown = erasure.public_status(CODE, _job(status, {"webhook_rows": 1}))

    assert (shown["status"], shown["completed_at"], shown["erased"]) == ("failed", "2026-01-01T00:00:41Z", None)


def test_a_log_rows_tombstone_keeps_its_key_route_and_expiry_and_nothing_of_the_body():
    row = {
        schema.ID: "wh-1",
        "lane": "messages",
        "tenant": "waba-1",
        "kind": "whatsapp_business_account",
        "received_at": REQUESTED,
        "body": "{...}",
        schema.SENDER_HASH: HASH,
        schema.TTL: 1_767_830_400,
    }

    assert erasure.log_tombstone(row, now=FINISHED, expires_at=1) == {
        schema.ID: "wh-1",
        "lane": "messages",
        "tenant": "waba-1",
        "kind": "whatsapp_business_account",
        "received_at": REQUESTED,
        "status": schema.RowStatus.ERASED,
        erasure.ERASED_AT: FINISHED,
        schema.TTL: 1_767_830_400,
    }


def test_a_job_rows_tombstone_keeps_what_get_jobs_shows_and_takes_an_expiry_when_it_had_none():
    names_no_one = {
        schema.ID: "job-1",
        "lane": "ai",
        "tenant": "shop-1",
        "kind": "ai.inbound",
        "created_at": REQUESTED,
        "attempts": 2,
        "deferrals": 0,
    }
    row = {
        **names_no_one,
        "payload": {"text": "call me on +44 7700 900123"},
        "idempotency_key": "order-77",
        "last_error": "vendor: 503",
    }

    assert erasure.job_tombstone(row, now=FINISHED, expires_at=1_767_830_400.5) == {
        **names_no_one,
        "status": schema.RowStatus.ERASED,
        "updated_at": FINISHED,
        "finished_at": FINISHED,
        erasure.ERASED_AT: FINISHED,
        schema.TTL: 1_767_830_400,
    }


def test_a_job_rows_tombstone_keeps_the_expiry_the_row_had():
    row = {schema.ID: "job-2", "lane": "bulk", "tenant": "shop-1", "kind": "import.page", schema.TTL: 1_800_000_000}

    assert erasure.job_tombstone(row, now=FINISHED, expires_at=1)[schema.TTL] == 1_800_000_000
