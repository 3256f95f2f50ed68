"""The jobs API's rules alone, on in-memory ports: who may act for whom, shedding, the tenant's
limit, idempotent replay, and what a failed send or an unreadable sender key leaves behind."""

from __future__ import annotations

import json

import pytest

from pipeline import schema
from pipeline.domain import http
from pipeline.domain.jobs import requests as jobs
from pipeline.domain.jobs.admission import LaneProfile, LaneSnapshot
from pipeline.domain.jobs.api import JobsApi, JobsApiPorts, JobsApiRules
from pipeline.metric_names import JobFailure
from pipeline.settings.callers import Callers
from tests.unit.domain.door_ports import (
    NOW,
    QUEUE_URLS,
    Hasher,
    JobStore,
    LaneStates,
    Queue,
    Telemetry,
    body_of,
    job_request,
    request,
)

ACCOUNT = "123456789012"
PRODUCER = f"arn:aws:sts::{ACCOUNT}:assumed-role/producer/backend-7"
PARTNER = f"arn:aws:sts::{ACCOUNT}:assumed-role/partner/sync"
STRANGER = f"arn:aws:sts::{ACCOUNT}:assumed-role/stranger/probe"
BULK = LaneProfile(name="bulk", objective_seconds=60, slots=10, capacity_per_second=0.1)
RULES = JobsApiRules(
    callers=Callers.from_mapping(
        {f"arn:aws:iam::{ACCOUNT}:role/producer": ["*"], f"arn:aws:iam::{ACCOUNT}:role/partner": ["globex"]}
    ),
    profiles={"bulk": BULK},
    queue_urls=QUEUE_URLS,
    max_body_bytes=64 * 1024,
    max_payload_bytes=16 * 1024,
    tenant_queued_limit=2,
    jobs_seconds=30 * 86400,
)


class Api:
    def __init__(self) -> None:
        self.store, self.lanes, self.queue, self.senders = JobStore(), LaneStates(), Queue(), Hasher()
        self.telemetry = Telemetry()

    def __call__(self, http_request: http.HttpRequest) -> http.Reply:
        ports = JobsApiPorts(store=self.store, lanes=self.lanes, queue=self.queue, senders=self.senders)
        return JobsApi(RULES, ports, self.telemetry, lambda: NOW).answer(http_request)


@pytest.fixture
def api() -> Api:
    return Api()


def submit(body: dict, *, key: str | None = None, caller: str = PRODUCER) -> http.HttpRequest:
    headers = {} if key is None else {"idempotency-key": key}
    return request("POST", "/jobs", body=json.dumps(body), headers=headers, caller=caller)


def test_an_admitted_job_is_written_then_sent_and_answered_202(api):
    reply = api(submit(job_request()))

    assert reply.status == 202
    job_id = body_of(reply)["id"]
    assert reply.headers["location"] == f"/jobs/{job_id}"
    assert list(api.store.jobs) == [job_id]
    ((url, sent),) = api.queue.sent
    assert (url, sent.envelope.id, sent.envelope.created_at) == (QUEUE_URLS["bulk"], job_id, NOW)
    assert ("JobAccepted", {"Lane": "bulk"}) in api.telemetry.counts


def test_a_lane_that_cannot_start_the_job_in_time_sheds_it_before_anything_is_written(api):
    # Given a saturated bulk lane whose 7 waiting messages drain at 6 a minute: 70 s > 60 s
    api.lanes.snapshots["bulk"] = LaneSnapshot(backlog=7, in_flight=10, drained=6, window_seconds=60)

    reply = api(submit(job_request()))

    assert (reply.status, reply.headers["retry-after"]) == (503, "70")
    assert (api.store.jobs, api.queue.sent) == ({}, [])
    assert ("JobShed", {"Lane": "bulk"}) in api.telemetry.counts


def test_a_tenant_at_its_limit_is_429_and_nothing_is_sent(api):
    for page in (1, 2):
        api(submit(job_request(payload={"page": page})))

    reply = api(submit(job_request(payload={"page": 3})))

    assert reply.status == 429
    assert len(api.queue.sent) == 2


def test_a_repeated_idempotency_key_returns_the_first_job_without_a_second_message(api):
    first = api(submit(job_request(), key="import-7"))

    again = api(submit(job_request(), key="import-7"))

    assert again.status == 202
    assert body_of(again) == {"id": body_of(first)["id"], "status": schema.RowStatus.QUEUED, "duplicate": True}
    assert len(api.queue.sent) == 1


def test_an_idempotency_key_reused_for_another_job_is_422(api):
    api(submit(job_request(), key="import-7"))

    reply = api(submit(job_request(payload={"page": 2}), key="import-7"))

    assert reply.status == 422
    assert len(api.store.jobs) == 1


def test_a_failed_send_still_answers_202_because_the_row_is_the_record(api):
    api.queue.fails = True

    reply = api(submit(job_request()))

    assert reply.status == 202
    assert len(api.store.jobs) == 1
    assert ("EnqueueFailed", {"Lane": "bulk"}) in api.telemetry.counts


def test_an_unreadable_sender_key_refuses_a_job_about_a_person_before_it_is_written(api):
    api.senders.unavailable = True

    with pytest.raises(http.Failed) as raised:
        api(submit(job_request(payload={"sender": "+44 7700 900123"})))

    assert raised.value.reason == JobFailure.SECRETS_UNAVAILABLE
    assert api.store.jobs == {}


def test_a_caller_acts_only_for_its_granted_tenants(api):
    assert api(submit(job_request(tenant="acme"), caller=PARTNER)).status == 403
    assert api(submit(job_request(tenant="globex"), caller=PARTNER)).status == 202
    assert api(submit(job_request(), caller=STRANGER)).status == 403
    assert [tenant for _, tenant in api.store.queued] == ["globex"]


def test_a_job_of_another_tenant_is_forbidden_without_naming_the_tenant(api):
    job_id = body_of(api(submit(job_request(tenant="acme"))))["id"]

    reply = api(request("GET", f"/jobs/{job_id}", path_parameters={"id": job_id}, caller=PARTNER))

    assert reply.status == 403
    assert "acme" not in reply.body


def test_a_job_is_read_by_its_id_and_an_id_this_api_never_issued_is_404(api):
    job_id = body_of(api(submit(job_request())))["id"]

    found = api(request("GET", f"/jobs/{job_id}", path_parameters={"id": job_id}, caller=PRODUCER))
    unknown = api(request("GET", "/jobs/not-a-job", path_parameters={"id": "not-a-job"}, caller=PRODUCER))

    assert (found.status, body_of(found)["status"]) == (200, schema.RowStatus.QUEUED)
    assert unknown.status == 404
    assert jobs.is_job_id(job_id)
