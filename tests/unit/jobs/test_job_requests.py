"""What a valid job request is, and the ids and fingerprints idempotency rests on."""

from __future__ import annotations

import json
import re

import pytest

from pipeline.domain import jobs
from pipeline.domain.jobs import InvalidJob, PayloadTooLarge

NOW = 1_800_000_000.0
LANES = ("ai", "bulk", "messages")


def parse(body, key: str | None = None, limit: int = 1024):
    raw = body if isinstance(body, bytes) else json.dumps(body, ensure_ascii=False).encode()
    return jobs.parse_request(raw, key, lanes=LANES, max_payload_bytes=limit, now=NOW)


def valid(**changes) -> dict:
    return {"lane": "bulk", "kind": "import.page", "tenant": "acme", "payload": {"page": 1}, **changes}


def test_a_valid_request_parses():
    request = parse(valid(deadline=NOW + 60), key="abc")

    assert (request.lane, request.kind, request.tenant) == ("bulk", "import.page", "acme")
    assert request.payload == {"page": 1}
    assert request.deadline == NOW + 60
    assert request.idempotency_key == "abc"
    assert request.payload_size == len(b'{"page":1}')


@pytest.mark.parametrize(
    ("body", "problem"),
    [
        (b"\xff", "body is not valid UTF-8"),
        (b"{", "body is not valid JSON"),
        (b'{"lane": NaN}', "body is not valid JSON"),
        (b"[]", "body must be a JSON object"),
        (b"[" * 100_000, "nests too deeply"),
        (valid(extra=1, another=2), "unknown fields: another, extra"),
        (valid(lane="nowhere"), "lane must be one of: ai, bulk, messages"),
        (valid(lane=5), "lane must be one of"),
        (valid(kind=""), "kind must be"),
        (valid(kind="has space"), "kind must be"),
        (valid(kind="k" * 65), "kind must be"),
        (valid(tenant=""), "tenant must be"),
        (valid(tenant="a#b"), "tenant must be"),
        (valid(tenant="t" * 129), "tenant must be"),
        (valid(tenant=12), "tenant must be"),
        (valid(payload=None), "payload is required"),
        ({k: v for k, v in valid().items() if k != "payload"}, "payload is required"),
        (valid(deadline="tomorrow"), "deadline must be a number"),
        (valid(deadline=True), "deadline must be a number"),
        (valid(deadline=NOW), "deadline is in the past"),
        (valid(deadline=NOW * 1000), "more than a year away"),
        (valid(payload={"a": "\uffff"}), "U+FFFE or U+FFFF"),
        (b'{"lane":"bulk","kind":"k","tenant":"t","payload":"\\ud800"}', "lone surrogate"),
        (valid(payload={"n": 10**40}), "longer than 38 digits"),
        (valid(payload={"n": 1e200}), "outside DynamoDB's range"),
        (valid(payload=json.loads("[" * 40 + "]" * 40)), "nests deeper than 31 levels"),
    ],
)
def test_each_bad_request_is_refused_naming_the_problem(body, problem):
    with pytest.raises(InvalidJob, match=re.escape(problem)) as raised:
        parse(body)
    assert raised.value.status == 400


def test_every_problem_is_named_at_once():
    with pytest.raises(InvalidJob) as raised:
        parse({"lane": "nowhere", "kind": "", "tenant": ""})

    message = str(raised.value)
    for problem in ("lane must be", "kind must be", "tenant must be", "payload is required"):
        assert problem in message


@pytest.mark.parametrize("key", ["", "with space", "é", "k" * 256])
def test_bad_idempotency_keys_are_refused(key):
    with pytest.raises(InvalidJob, match="Idempotency-Key"):
        parse(valid(), key=key)


def test_a_payload_over_the_limit_is_413():
    with pytest.raises(PayloadTooLarge, match="limit is 20") as raised:
        parse(valid(payload={"text": "x" * 20}), limit=20)
    assert raised.value.status == 413


def test_any_json_value_but_null_is_a_payload():
    for payload in (0, False, "", [], {}, "👋", 1.5, [1, {"a": None}]):
        assert parse(valid(payload=payload)).payload == payload


def test_job_ids_from_a_key_are_deterministic_and_scoped_to_the_tenant():
    assert jobs.job_id("acme", "k") == jobs.job_id("acme", "k")
    assert jobs.job_id("acme", "k") != jobs.job_id("globex", "k")
    assert jobs.job_id("acme", "k") != jobs.job_id("acme", "k2")
    assert jobs.job_id("acme", None) != jobs.job_id("acme", None)
    for job_id in (jobs.job_id("acme", "k"), jobs.job_id("acme", None)):
        assert jobs.is_job_id(job_id)


def test_the_fingerprint_ignores_key_order_and_deadline_but_not_the_work():
    base = parse(valid(payload={"a": 1, "b": 2}, deadline=NOW + 10))

    assert parse(valid(payload={"b": 2, "a": 1}, deadline=NOW + 99)).fingerprint == base.fingerprint
    assert parse(valid(payload={"a": 1, "b": 3})).fingerprint != base.fingerprint
    assert parse(valid(payload={"a": 1, "b": 2}, kind="other")).fingerprint != base.fingerprint


def test_small_payloads_travel_inline_and_large_ones_by_reference():
    small = jobs.envelope("job-1", parse(valid()), NOW)
    large_request = parse(valid(payload="x" * 300_000), limit=400_000)
    large = jobs.envelope("job-2", large_request, NOW)

    assert (small.payload, small.ref) == ({"page": 1}, None)
    assert (large.payload, large.ref) == (None, "job-2")
