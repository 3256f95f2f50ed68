"""POST /jobs and GET /jobs/{id} through the handler, over moto."""

from __future__ import annotations

import base64
import json

import pytest

from pipeline import schema
from pipeline.domain.envelope import Envelope
from pipeline.domain.jobs import requests as jobs
from stacks.config.environments import ENVIRONMENTS
from tests.support.aws import http_api_event
from tests.unit.jobs.conftest import NOW, PRODUCER, body_of, job, status, submit


def test_an_accepted_job_is_written_pending_counted_and_enqueued(api, inspect, metrics):
    # When a producer submits a job
    response = api(submit(job(deadline=NOW + 600)), None)

    # Then it gets 202 with the job's id and where to poll it
    assert response["statusCode"] == 202
    job_id = body_of(response)["id"]
    assert jobs.is_job_id(job_id)
    assert response["headers"]["location"] == f"/jobs/{job_id}"
    # And the row exists before the message, pending, in the age index, with its payload
    row = inspect.job_row(job_id)
    assert row["status"]["S"] == schema.RowStatus.QUEUED
    assert (row["lane"]["S"], row["kind"]["S"], row["tenant"]["S"]) == ("bulk", "import.page", "acme")
    assert (row["attempts"]["N"], row["deferrals"]["N"], row["replays"]["N"]) == ("0", "0", "0")
    assert row[schema.PENDING_SHARD]["S"] == schema.pending_shard(job_id)
    assert float(row[schema.PENDING_SINCE]["N"]) == NOW
    assert float(row["deadline"]["N"]) == NOW + 600
    assert row["payload"] == {"M": {"page": {"N": "1"}}}
    # And the tenant's queued count holds it, and its lane has the envelope, grouped by tenant
    assert inspect.queued("bulk", "acme") == 1
    [message] = inspect.messages("bulk")
    envelope = Envelope.from_json(message["Body"])
    assert (envelope.id, envelope.source, envelope.tenant, envelope.deadline) == (job_id, "job", "acme", NOW + 600)
    assert envelope.payload == {"page": 1}
    assert message["Attributes"]["MessageGroupId"] == "acme"
    assert ("JobAccepted", {"Lane": "bulk"}) in metrics()


def test_get_answers_the_jobs_status(api):
    job_id = body_of(api(submit(job()), None))["id"]

    response = api(status(job_id), None)

    assert response["statusCode"] == 200
    assert body_of(response) == {
        "id": job_id,
        "lane": "bulk",
        "kind": "import.page",
        "tenant": "acme",
        "status": "queued",
        "attempts": 0,
        "deferrals": 0,
        "created_at": NOW,
        "updated_at": NOW,
        "deadline": None,
        "last_error": None,
        "error_class": None,
        "result": None,
    }


def test_get_shows_a_failed_jobs_reason_and_class_never_the_error_text(api, inspect):
    # Given a job dead-lettered on an AWS error whose text names a role, a table and an account
    job_id = body_of(api(submit(job()), None))["id"]
    aws_text = (
        "An error occurred (AccessDeniedException) when calling the PutItem operation: User: "
        "arn:aws:sts::123456789012:assumed-role/lanes-consumer/i-0abc is not authorized to perform: "
        "dynamodb:PutItem on resource: arn:aws:dynamodb:eu-west-1:123456789012:table/lanes-data"
    )
    inspect.fail(job_id, f"aws_deployment: {aws_text}", "AccessDeniedException")

    # When its producer reads it
    shown = body_of(api(status(job_id), None))

    # Then it sees why in a word and the class, and nothing of AWS's text
    assert (shown["status"], shown["last_error"], shown["error_class"]) == (
        "failed",
        "aws_deployment",
        "AccessDeniedException",
    )
    assert "arn:" not in json.dumps(shown)
    assert "123456789012" not in json.dumps(shown)


def test_the_erasure_tenant_is_refused_to_producers(api, inspect):
    # A producer granted every tenant still cannot fill the erasure tenant's queue
    response = api(submit(job(tenant="privacy")), None)

    assert response["statusCode"] == 400
    assert "tenant privacy is the pipeline's own" in body_of(response)["message"]
    assert inspect.job_rows() == []


def test_unknown_jobs_are_404(api, aws_calls):
    assert api(status("job-" + "0" * 32), None)["statusCode"] == 404
    aws_calls.reset()

    # An id this API could not have issued is 404 without asking DynamoDB
    for junk in ("nope", "job-XYZ", "../jobs", ""):
        assert api(status(junk), None)["statusCode"] == 404
    assert aws_calls.calls == []


def test_the_job_id_is_also_read_from_the_path(api):
    job_id = body_of(api(submit(job()), None))["id"]

    response = api(http_api_event("GET", f"/jobs/{job_id}", caller=PRODUCER), None)

    assert body_of(response)["id"] == job_id


def test_bad_requests_are_400_naming_the_problem_and_write_nothing(api, inspect, aws_calls):
    cases = {
        "not json": "body is not valid JSON",
        json.dumps(job(lane="nowhere")): "lane must be one of: ai, bulk, engagement, messages, scheduled",
        json.dumps({k: v for k, v in job().items() if k != "tenant"}): "tenant must be",
        json.dumps(job(colour="blue")): "unknown fields: colour",
        json.dumps(job(deadline=NOW - 1)): "deadline is in the past",
    }
    aws_calls.reset()
    for body, problem in cases.items():
        response = api(submit(body), None)

        assert response["statusCode"] == 400, body
        assert problem in body_of(response)["message"], body
    assert inspect.job_rows() == []
    assert aws_calls.calls == []


def test_a_payload_over_the_limit_is_413(make_api, inspect):
    api = make_api(max_payload_bytes=100)

    response = api(submit(job(payload={"text": "x" * 200})), None)

    assert response["statusCode"] == 413
    assert "limit is 100" in body_of(response)["message"]
    assert inspect.job_rows() == []


def test_base64_bodies_are_accepted(api):
    event = submit(job())
    event.update(body=base64.b64encode(event["body"].encode()).decode(), isBase64Encoded=True)

    assert api(event, None)["statusCode"] == 202


def test_the_same_idempotency_key_gives_the_same_job_and_no_second_one(api, inspect, metrics):
    # Given a job submitted with an idempotency key
    first = api(submit(job(), key="import-42"), None)

    # When the producer retries it with the same key
    second = api(submit(job(), key="import-42"), None)

    # Then it gets the same job, and there is one row, one count and one message
    assert (first["statusCode"], second["statusCode"]) == (202, 202)
    assert body_of(second)["id"] == body_of(first)["id"]
    assert body_of(second)["duplicate"] is True
    assert len(inspect.job_rows()) == 1
    assert inspect.queued("bulk", "acme") == 1
    assert len(inspect.messages("bulk")) == 1
    assert ("JobDuplicate", {"Lane": "bulk"}) in metrics()


def test_a_retry_with_a_fresh_deadline_is_still_the_same_job(api, inspect):
    first = api(submit(job(deadline=NOW + 60), key="k"), None)

    second = api(submit(job(deadline=NOW + 90), key="k"), None)

    assert body_of(second)["id"] == body_of(first)["id"]
    assert len(inspect.job_rows()) == 1


def test_an_idempotency_key_reused_for_a_different_job_is_422(api, inspect):
    api(submit(job(payload={"page": 1}), key="k"), None)

    response = api(submit(job(payload={"page": 2}), key="k"), None)

    assert response["statusCode"] == 422
    assert len(inspect.job_rows()) == 1
    assert inspect.queued("bulk", "acme") == 1


def test_idempotency_keys_are_per_tenant(api, inspect):
    first = api(submit(job(tenant="acme"), key="k"), None)
    second = api(submit(job(tenant="globex"), key="k"), None)

    assert body_of(first)["id"] != body_of(second)["id"]
    assert len(inspect.job_rows()) == 2


def test_without_a_key_every_submission_is_a_new_job(api, inspect):
    api(submit(job()), None)
    api(submit(job()), None)

    assert len(inspect.job_rows()) == 2


def test_a_tenant_at_its_queued_limit_gets_429_and_others_do_not(make_api, inspect, metrics):
    # Given a tenant limit of two queued jobs per lane, and acme already at it
    api = make_api(tenant_queued_limit=2)
    for _ in range(2):
        assert api(submit(job()), None)["statusCode"] == 202

    # When acme submits a third, and globex its first
    refused = api(submit(job()), None)
    other = api(submit(job(tenant="globex")), None)

    # Then acme is told it is over its own limit (429, not 503), nothing is written for it,
    # and globex is unaffected
    assert refused["statusCode"] == 429
    assert "acme" in body_of(refused)["message"]
    assert other["statusCode"] == 202
    assert inspect.queued("bulk", "acme") == 2
    assert len(inspect.job_rows()) == 3
    assert ("JobTenantLimited", {"Lane": "bulk"}) in metrics()


def test_a_finished_job_frees_its_tenants_slot(make_api, inspect):
    api = make_api(tenant_queued_limit=1)
    api(submit(job()), None)
    assert api(submit(job()), None)["statusCode"] == 429

    inspect.release("bulk", "acme")

    assert api(submit(job()), None)["statusCode"] == 202


def test_a_retried_key_at_the_tenant_limit_is_still_its_job_not_a_429(make_api):
    api = make_api(tenant_queued_limit=1)
    first = api(submit(job(), key="k"), None)

    again = api(submit(job(), key="k"), None)

    assert again["statusCode"] == 202
    assert body_of(again)["id"] == body_of(first)["id"]


def test_enqueue_failure_after_the_write_is_202_and_leaves_the_row_for_the_sweeper(api, aws_calls, inspect, metrics):
    aws_calls.fail("sqs.SendMessage")

    response = api(submit(job()), None)

    assert response["statusCode"] == 202
    row = inspect.job_row(body_of(response)["id"])
    assert row["status"]["S"] == schema.RowStatus.QUEUED
    assert schema.PENDING_SHARD in row
    assert inspect.messages("bulk") == []
    assert ("EnqueueFailed", {"Lane": "bulk"}) in metrics()
    # And it is marked as never sent, as the door marks a delivery: the sweeper replays it after
    # its grace period, not after a busy lane's patience (15 to 60 minutes)
    assert float(row[schema.SEND_FAILED_AT]["N"]) == NOW


def test_a_job_whose_send_failed_and_whose_mark_failed_is_still_202_and_pending(api, aws_calls, inspect):
    aws_calls.fail("sqs.SendMessage")
    aws_calls.fail("dynamodb.UpdateItem")

    response = api(submit(job()), None)

    assert response["statusCode"] == 202
    row = inspect.job_row(body_of(response)["id"])
    assert schema.PENDING_SHARD in row
    assert schema.SEND_FAILED_AT not in row


def test_a_failed_job_write_is_500_and_nothing_is_enqueued(api, aws_calls, inspect, metrics):
    aws_calls.fail("dynamodb.TransactWriteItems")

    response = api(submit(job()), None)

    assert response["statusCode"] == 500
    assert inspect.messages("bulk") == []
    assert ("JobFailed", {"Reason": "table_unavailable"}) in metrics()


def test_a_failed_status_read_is_500(api, aws_calls):
    aws_calls.fail("dynamodb.GetItem")

    assert api(status("job-" + "0" * 32), None)["statusCode"] == 500


def test_other_methods_are_405(api):
    assert api(http_api_event("DELETE", "/jobs/x"), None)["statusCode"] == 405


@pytest.mark.parametrize("lane", [lane.name for lane in ENVIRONMENTS["local"].lanes])
def test_a_job_may_name_any_lane_and_is_sent_to_that_lanes_queue(api, inspect, lane):
    # When a producer submits a job for the lane (admission reads that lane's depth first)
    response = api(submit(job(lane=lane, kind="test")), None)

    # Then it is accepted and waits on that lane's queue, nowhere else
    assert response["statusCode"] == 202
    [message] = inspect.messages(lane)
    assert Envelope.from_json(message["Body"]).id == body_of(response)["id"]
