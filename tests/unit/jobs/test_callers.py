"""Tenants bound to the caller's IAM identity: who may submit and read jobs for which tenant."""

from __future__ import annotations

import json

import pytest

from pipeline.settings.callers import ALL_TENANTS, Callers, grant_key, principal_of
from tests.unit.jobs.conftest import PARTNER_ACME, body_of, job, status, submit

ACCOUNT = "111122223333"
GRANTS = Callers.from_mapping(
    {
        f"arn:aws:iam::{ACCOUNT}:role/integrations/partner-acme": ["acme"],
        f"arn:aws:iam::{ACCOUNT}:user/batch": ["acme", "globex"],
        "arn:aws:iam::444455556666:root": [ALL_TENANTS],
    }
)


@pytest.mark.parametrize(
    ("caller", "tenant", "allowed"),
    [
        (f"arn:aws:sts::{ACCOUNT}:assumed-role/partner-acme/session-1", "acme", True),
        (f"arn:aws:sts::{ACCOUNT}:assumed-role/partner-acme/session-1", "globex", False),
        ("arn:aws:sts::999999999999:assumed-role/partner-acme/session-1", "acme", False),
        (f"arn:aws:sts::{ACCOUNT}:assumed-role/partner-acme-2/s", "acme", False),
        (f"arn:aws:iam::{ACCOUNT}:user/batch", "globex", True),
        (f"arn:aws:iam::{ACCOUNT}:user/ops/batch", "globex", True),
        (f"arn:aws:iam::{ACCOUNT}:user/other", "acme", False),
        ("arn:aws:sts::444455556666:assumed-role/anything/s", "initech", True),
        (f"arn:aws:iam::{ACCOUNT}:root", "acme", False),
        (None, "acme", False),
        ("not an arn", "acme", False),
    ],
    ids=[
        "role-session",
        "role-other-tenant",
        "same-role-name-other-account",
        "other-role-sharing-a-prefix",
        "user",
        "user-with-path",
        "ungranted-user",
        "account-wide-grant",
        "root-of-an-account-without-one",
        "no-identity",
        "garbage",
    ],
)
def test_a_caller_may_act_only_for_the_tenants_granted_to_it(caller, tenant, allowed):
    assert GRANTS.may_act_for(caller, tenant) is allowed


@pytest.mark.parametrize(
    ("principal", "message"),
    [
        ("arn:aws:sts::111122223333:assumed-role/r/s", "not an IAM role, user or account root"),
        ("arn:aws:iam::1111:role/r", "not an IAM role, user or account root"),
        ("role/r", "not an IAM role, user or account root"),
    ],
)
def test_a_grant_names_a_principal_as_iam_writes_it(principal, message):
    with pytest.raises(ValueError, match=message):
        grant_key(principal)


def test_a_grant_needs_valid_tenants_and_a_principal_once():
    with pytest.raises(ValueError, match="at least one tenant"):
        Callers.from_mapping({f"arn:aws:iam::{ACCOUNT}:role/r": []})
    with pytest.raises(ValueError, match="not tenant ids"):
        Callers.from_mapping({f"arn:aws:iam::{ACCOUNT}:role/r": ["a#b"]})
    with pytest.raises(ValueError, match="granted twice"):
        Callers.from_mapping({f"arn:aws:iam::{ACCOUNT}:role/r": ["a"], f"arn:aws:iam::{ACCOUNT}:role/path/r": ["b"]})


def test_a_session_name_never_appears_in_what_is_logged_or_answered():
    # SSO sessions are named after the person: often an email address
    caller = f"arn:aws:sts::{ACCOUNT}:assumed-role/AWSReservedSSO_Admin_0a1b/alice@example.com"

    assert principal_of(caller) == f"arn:aws:iam::{ACCOUNT}:role/AWSReservedSSO_Admin_0a1b"


# Through the handler, with the local environment's grants: `producer` every tenant, `partner-acme`
# only acme.


def test_a_caller_may_submit_for_its_own_tenant(api, inspect):
    response = api(submit(job(tenant="acme"), caller=PARTNER_ACME), None)

    assert response["statusCode"] == 202
    assert inspect.job_row(body_of(response)["id"]) is not None


def test_submitting_for_another_tenant_is_refused_before_anything_is_asked_or_written(api, inspect, aws_calls, metrics):
    # When the acme partner submits a job for globex (whose queued-job bound it would fill)
    response = api(submit(job(tenant="globex"), caller=PARTNER_ACME), None)

    # Then it is 403, saying who may not do what, and nothing was read, counted or sent
    assert response["statusCode"] == 403
    assert body_of(response) == {
        "message": "arn:aws:iam::123456789012:role/partner-acme may not submit jobs for tenant globex"
    }
    assert aws_calls.calls == []
    assert inspect.job_rows() == []
    assert inspect.queued("bulk", "globex") == 0
    assert ("JobForbidden", {}) in metrics()


def test_reading_another_tenants_job_is_refused_without_its_status(api):
    # Given a globex job submitted by the producer
    job_id = body_of(api(submit(job(tenant="globex")), None))["id"]

    # When the acme partner asks for it, and then the producer
    refused = api(status(job_id, caller=PARTNER_ACME), None)
    allowed = api(status(job_id), None)

    # Then the partner learns neither its status nor its tenant; the producer reads it
    assert refused["statusCode"] == 403
    assert "globex" not in refused["body"]
    assert "queued" not in refused["body"]
    assert (allowed["statusCode"], body_of(allowed)["tenant"]) == (200, "globex")


@pytest.mark.parametrize(
    "caller",
    [None, "arn:aws:sts::123456789012:assumed-role/stranger/s", "arn:aws:sts::999999999999:assumed-role/producer/s"],
    ids=["no-identity", "ungranted-role", "producer-name-in-another-account"],
)
def test_a_caller_without_a_grant_is_refused_on_both_routes(api, inspect, caller):
    posted = api(submit(job(), caller=caller), None)
    read = api(status("job-" + "0" * 32, caller=caller), None)

    assert (posted["statusCode"], read["statusCode"]) == (403, 403)
    assert "is not granted any tenant on this API" in json.loads(posted["body"])["message"]
    assert inspect.job_rows() == []


def test_the_grants_travel_to_the_function_in_its_settings(make_api, api):
    # Given the producer's grant taken away from the deployed settings
    narrowed = make_api(callers={"arn:aws:iam::123456789012:role/partner-acme": ["acme"]})

    # Then the producer is refused by that instance, and still accepted by the configured one
    assert narrowed(submit(job()), None)["statusCode"] == 403
    assert api(submit(job()), None)["statusCode"] == 202
