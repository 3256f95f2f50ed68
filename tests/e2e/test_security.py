"""The doors under hostile and changing conditions, on the local runtime in its own process: a
bounded fuzz of both doors, tenants bound to the caller, and a secret rotated while it runs."""

from __future__ import annotations

import json
import time
import uuid
from datetime import UTC, datetime

import pytest

from bench import fuzz
from local_aws.client import PipelineClient
from ops.drive import wait_for
from ops.drive.meta_payloads import whatsapp_message
from stacks.config.environments import ENVIRONMENTS

pytestmark = [pytest.mark.xdist_group("e2e"), pytest.mark.slow]
LOCAL = ENVIRONMENTS["local"]


def test_a_bounded_fuzz_of_both_doors_gets_no_5xx_and_leaves_no_unsigned_row(pipeline):
    # Given a few hundred random requests (bytes, headers, sizes, encodings, methods; signed and
    # not), paced under the local routes' throttles so that the doors answer them
    report = fuzz.run(
        pipeline.api_url,
        pipeline.client.app_secret,
        requests=300,
        seconds=60,
        rate=40,
        seed=20270115,
        max_body=64 * 1024,
    )
    time.sleep(1)
    fuzz.check(report, pipeline.aws, pipeline.outputs)

    # Then nothing failed, nothing unsigned was stored, and both doors really were reached
    assert report.failures == [], "\n".join(report.lines())
    assert report.sent == 300
    # (200 and 202: signed deliveries and jobs got through; 400, 401, 403: each kind of refusal)
    assert {200, 202, 400, 401, 403} <= set(report.statuses), report.statuses
    assert report.unsigned_webhooks
    assert report.signed_rows_found == len(report.accepted_signed_webhooks)


def _bulk_job(client: PipelineClient, tenant: str):
    payload = {"import_id": uuid.uuid4().hex, "page": 0, "rows": [{"id": "r1"}]}
    return client.submit_job(lane="bulk", kind="import.page", tenant=tenant, payload=payload)


def test_a_caller_acts_only_for_the_tenants_granted_to_its_role(pipeline):
    partner = PipelineClient(pipeline.api_url, role="partner-acme")
    stranger = PipelineClient(pipeline.api_url, role="stranger")
    other = f"globex-{uuid.uuid4().hex[:8]}"

    # The acme partner may submit for acme, not for another tenant; a role with no grant, nothing
    assert _bulk_job(partner, "acme").status == 202
    refused = _bulk_job(partner, other)
    assert refused.status == 403
    assert (
        refused.json()["message"]
        == f"arn:aws:iam::123456789012:role/partner-acme may not submit jobs for tenant {other}"
    )
    assert _bulk_job(stranger, "acme").status == 403

    # And the other tenant's job, submitted by the producer, is not the partner's to read
    accepted = _bulk_job(pipeline.client, other)
    assert accepted.status == 202
    job_id = accepted.json()["id"]
    assert partner.job(job_id).status == 403
    assert pipeline.client.job(job_id).status == 200


def _iso(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _deliver(pipeline, secret: str) -> int:
    payload = whatsapp_message(f"waba-{uuid.uuid4().hex[:8]}", f"wamid.{uuid.uuid4().hex}", "rotation check")
    body = json.dumps(payload).encode()
    return PipelineClient(pipeline.api_url, app_secret=secret).deliver(None, raw=body).status


def test_a_secret_rotated_in_a_running_runtime_takes_the_new_one_within_the_cache_time_and_drops_the_old(pipeline):
    secrets = pipeline.aws("secretsmanager")
    arn = pipeline.outputs["MetaSecretArn"]
    original = secrets.get_secret_value(SecretId=arn)["SecretString"]
    old = json.loads(original)["app_secret"]
    new = uuid.uuid4().hex * 2
    cache = LOCAL.webhook.secret_cache_seconds
    assert _deliver(pipeline, old) == 200
    try:
        # When the operator stores a new app secret, keeping the old one for 20 s
        rotated_at = time.time()
        rotated = {**json.loads(original), "app_secret": new, "previous_app_secret": old}
        rotated["previous_expires_at"] = _iso(rotated_at + 20)
        secrets.put_secret_value(SecretId=arn, SecretString=json.dumps(rotated))

        # Then deliveries signed with the new secret are accepted within the cache time (here at
        # once: a refused signature makes a door read the secret again, once per 5 s)
        wait_for(lambda: _deliver(pipeline, new) == 200, timeout=cache, interval=1, what="the new secret")
        # And, once every door has had to read the secret again (the cache time) and the old
        # secret's date has passed, the old one is refused while the new one still works
        time.sleep(max(0.0, rotated_at + cache + 1 - time.time()))
        assert [_deliver(pipeline, old) for _ in range(4)] == [403] * 4
        assert _deliver(pipeline, new) == 200
    finally:
        # The operator puts the original back for the tests that follow; a door sees it on the first
        # delivery signed with it once its last read is older than the refresh interval
        secrets.put_secret_value(SecretId=arn, SecretString=original)
        time.sleep(LOCAL.webhook.secret_refresh_seconds + 1)
    assert _deliver(pipeline, old) == 200
