"""A job about a person is indexed by that person's hash, so an erasure finds its row."""

from __future__ import annotations

import json

import boto3

from pipeline import schema
from pipeline.domain import senders
from pipeline.handlers import jobs as jobs_handler
from tests.support.aws import REGION, SENDER_KEY
from tests.unit.jobs.conftest import body_of, job, submit

KEY = SENDER_KEY.encode()


def test_a_job_about_a_person_carries_their_hash_and_one_about_nobody_none(api, inspect):
    # Given a reply turn for a customer's conversation, a comment to triage, and an import page
    turn = job(lane="ai", kind="ai.inbound", payload={"conversation": "+44 7700 900123", "message_id": "m1"})
    triage = job(lane="engagement", kind="comment.triage", payload={"comment_id": "c1", "from": {"id": "1357"}})
    page = job(payload={"import_id": "i1", "page": 0, "rows": []})

    # When they are submitted
    ids = [body_of(api(submit(request), None))["id"] for request in (turn, triage, page)]

    # Then each row names its person by hash only, and the import names nobody
    rows = [inspect.job_row(job_id) for job_id in ids]
    assert rows[0][schema.SENDER_HASH]["S"] == senders.sender_hash(KEY, "447700900123")
    assert rows[1][schema.SENDER_HASH]["S"] == senders.sender_hash(KEY, "1357")
    assert schema.SENDER_HASH not in rows[2]


def test_without_the_sender_key_a_job_about_a_person_is_refused_500_and_not_written(
    jobs_environ, clients, clock, inspect, metrics
):
    missing = boto3.client("secretsmanager", region_name=REGION).create_secret(Name="empty", SecretString="{}")["ARN"]
    api = jobs_handler.create_handler({**jobs_environ, "SENDER_KEY_ARN": missing}, clients=clients, clock=clock)

    response = api(submit(job(lane="ai", kind="ai.inbound", payload={"conversation": "15550001"})), None)

    assert response["statusCode"] == 500
    assert json.loads(response["body"]) == {"message": "internal error"}
    assert inspect.job_rows() == []
    assert ("JobFailed", {"Reason": "secrets_unavailable"}) in metrics()


def test_a_producer_cannot_submit_an_erasure_or_any_of_the_pipelines_own_kinds(api, inspect):
    # An erasure through the jobs API would let any producer erase anyone by hash
    response = api(submit(job(kind="privacy.erase", payload={"sender_hash": "0" * 32})), None)

    assert response["statusCode"] == 400
    assert "privacy.* are the pipeline's own" in body_of(response)["message"]
    assert inspect.job_rows() == []
