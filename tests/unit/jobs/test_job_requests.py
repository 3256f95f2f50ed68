"""What a valid job request is, and the ids and fingerprints idempotency rests on."""

from __future__ import annotations

import json

import pytest

from pipeline.domain.envelope import INLINE_PAYLOAD_LIMIT
from pipeline.domain.jobs import requests as jobs
from pipeline.domain.jobs.requests import InvalidJob, PayloadTooLarge

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


KIND_RULE = "kind must be 1-64 letters, digits, '_', '.', ':' or '-', starting with a letter or digit"
TENANT_RULE = "tenant must be 1-128 letters, digits, '_', '.', ':', '@' or '-'"
PAYLOAD_RULE = "payload is required (any JSON value but null)"


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (b"\xff", "body is not valid UTF-8"),
        (b"[]", "body must be a JSON object with lane, kind, tenant and payload"),
        (b"[" * 100_000, "body nests too deeply"),
        (valid(extra=1, another=2), "unknown fields: another, extra"),
        (valid(lane="nowhere"), "lane must be one of: ai, bulk, messages"),
        (valid(lane=5), "lane must be one of: ai, bulk, messages"),
        (valid(kind=""), KIND_RULE),
        (valid(kind="has space"), KIND_RULE),
        (valid(kind="k" * 65), KIND_RULE),
        (
            valid(kind="privacy.erase"),
            "kinds privacy.* are the pipeline's own: an erasure is asked for through Meta's "
            "data-deletion callback or `lanectl erase`",
        ),
        (valid(tenant=""), TENANT_RULE),
        (valid(tenant="a#b"), TENANT_RULE),
        (valid(tenant="t" * 129), TENANT_RULE),
        (valid(tenant=12), TENANT_RULE),
        (valid(payload=None), PAYLOAD_RULE),
        ({k: v for k, v in valid().items() if k != "payload"}, PAYLOAD_RULE),
        (valid(deadline="tomorrow"), "deadline must be a number (epoch seconds)"),
        (valid(deadline=True), "deadline must be a number (epoch seconds)"),
        (valid(deadline=NOW), "deadline is in the past"),
        (valid(deadline=NOW * 1000), "deadline is more than a year away (epoch seconds, not milliseconds)"),
        (valid(payload={"a": "\uffff"}), "payload holds U+FFFE or U+FFFF, which a queue message cannot carry"),
        (
            b'{"lane":"bulk","kind":"k","tenant":"t","payload":"\\ud800"}',
            "payload holds a lone surrogate escape, which has no UTF-8 form",
        ),
        (valid(payload={"n": 10**40}), "payload holds an integer longer than 38 digits"),
        (valid(payload={"n": 1e200}), "payload holds a number outside DynamoDB's range (1e-130 to 9.9e125)"),
        (valid(payload={"n": 1e-131}), "payload holds a number outside DynamoDB's range (1e-130 to 9.9e125)"),
        (valid(payload=json.loads("[" * 40 + "]" * 40)), "payload nests deeper than 31 levels"),
        (valid(payload=json.loads("[" * 32 + "]" * 32)), "payload nests deeper than 31 levels"),
    ],
)
def test_each_bad_request_is_refused_with_the_whole_of_its_problem(body, message):
    with pytest.raises(InvalidJob) as raised:
        parse(body)
    assert str(raised.value) == message
    assert raised.value.status == 400


@pytest.mark.parametrize(
    ("body", "why"), [(b"{", r"Expecting property name .+ \(char 1\)"), (b'{"lane": NaN}', "NaN is not JSON")]
)
def test_a_body_that_is_not_json_is_refused_saying_why(body, why):
    with pytest.raises(InvalidJob, match=rf"^body is not valid JSON: {why}$") as raised:
        parse(body)
    assert raised.value.status == 400


def test_every_problem_is_named_at_once():
    with pytest.raises(InvalidJob) as raised:
        parse({"lane": "nowhere", "kind": "", "tenant": ""})

    assert str(raised.value) == "; ".join(
        ("lane must be one of: ai, bulk, messages", KIND_RULE, TENANT_RULE, PAYLOAD_RULE)
    )


def test_a_payload_too_deep_to_encode_is_refused_not_crashed():
    # A payload decoded from JSON cannot get here (decoding has the same depth limit); a caller
    # handing parsed values over can
    deep: list = []
    for _ in range(100_000):
        deep = [deep]
    with pytest.raises(InvalidJob) as raised:
        jobs._payload_size(deep, 1_000_000)
    assert str(raised.value) == "payload nests too deeply"


@pytest.mark.parametrize(
    "payload",
    [
        json.loads("[" * 31 + "]" * 31),
        {"n": 10**38 - 1},
        {"n": -(10**38 - 1)},
        {"n": 1e-130},
        {"n": 9.9999999999999999999999999999999999999e125},
        {"n": 0.0},
        {"n": -0.0},
    ],
    ids=["31-levels", "38-digits", "38-digits-negative", "smallest", "largest", "zero", "negative-zero"],
)
def test_a_payload_at_each_of_dynamodbs_limits_is_accepted(payload):
    assert parse(valid(payload=payload)).payload == payload


def test_a_deadline_a_year_ahead_to_the_second_is_accepted():
    assert (
        parse(valid(deadline=NOW + jobs.MAX_DEADLINE_AHEAD_SECONDS)).deadline == NOW + jobs.MAX_DEADLINE_AHEAD_SECONDS
    )


@pytest.mark.parametrize("key", ["", "with space", "é", "k" * 256])
def test_bad_idempotency_keys_are_refused(key):
    with pytest.raises(InvalidJob) as raised:
        parse(valid(), key=key)
    assert str(raised.value) == "Idempotency-Key must be 1-255 visible ASCII characters"


def test_a_payload_over_the_limit_is_413_and_one_at_it_is_taken():
    with pytest.raises(PayloadTooLarge) as raised:
        parse(valid(payload={"text": "x" * 20}), limit=20)
    assert str(raised.value) == "payload is 31 bytes; the limit is 20"
    assert raised.value.status == 413
    assert parse(valid(payload={"text": "x" * 20}), limit=31).payload_size == 31


def test_the_payload_is_measured_as_compact_utf8_json():
    assert parse(valid(payload={"a": [1, 2], "é": "👋"})).payload_size == len('{"a":[1,2],"é":"👋"}'.encode())


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


def test_a_payload_exactly_at_the_inline_limit_travels_inline():
    text = "x" * (INLINE_PAYLOAD_LIMIT - 2)  # its JSON adds the two quotes
    request = parse(valid(payload=text), limit=INLINE_PAYLOAD_LIMIT)
    assert request.payload_size == INLINE_PAYLOAD_LIMIT
    assert jobs.envelope("job-3", request, NOW).payload == text


def test_a_job_shows_its_result_once_its_task_reported_one():
    job = jobs.Job(
        id="job-1",
        lane="bulk",
        kind="import.page",
        tenant="acme",
        status="done",
        attempts=1,
        deferrals=0,
        created_at=NOW,
        updated_at=NOW + 1,
        deadline=None,
        last_error=None,
        result={"rows": 40},
    )
    assert job.to_public()["result"] == {"rows": 40}
