"""The consumer's pure rules: classification, attempts and backoff, budget arithmetic, parsing."""

from __future__ import annotations

import random
import threading
import time

import pytest
from botocore.exceptions import ClientError, EndpointConnectionError, ParamValidationError

from pipeline.domain.consumer import retry
from pipeline.domain.consumer.records import receive
from pipeline.domain.consumer.time_limit import run_with_limit
from pipeline.domain.dependencies import budgets
from pipeline.domain.dependencies.budgets import LeaseBook, Mode
from pipeline.domain.envelope import Envelope
from pipeline.domain.errors import PermanentError, TaskTimeout, TransientError, classify


def _client_error(code: str, status: int) -> ClientError:
    return ClientError({"Error": {"Code": code, "Message": code}, "ResponseMetadata": {"HTTPStatusCode": status}}, "Op")


@pytest.mark.parametrize(
    ("exc", "transient", "error_class"),
    [
        (TransientError("vendor slow"), True, "TransientError"),
        (PermanentError("bad_page", "rows missing"), False, "PermanentError"),
        (_client_error("ProvisionedThroughputExceededException", 400), True, "ProvisionedThroughputExceededException"),
        (_client_error("TransactionConflictException", 400), True, "TransactionConflictException"),
        (_client_error("InternalServerError", 500), True, "InternalServerError"),
        (_client_error("AccessDeniedException", 400), True, "AccessDeniedException"),
        (_client_error("ValidationException", 400), False, "ValidationException"),
        (EndpointConnectionError(endpoint_url="https://dynamodb"), True, "EndpointConnectionError"),
        (ParamValidationError(report="bad"), False, "ParamValidationError"),
        (TimeoutError("read timed out"), True, "TimeoutError"),
        (KeyError("conversation"), False, "KeyError"),
        (ValueError("not a number"), False, "ValueError"),
        (RuntimeError("bug"), True, "RuntimeError"),
    ],
)
def test_errors_are_classified_by_who_is_at_fault(exc, transient, error_class):
    # When an exception is classified
    classified = classify(exc)
    # Then the world and the deployment retry, the input does not
    assert classified.transient is transient
    assert classified.error_class == error_class


def test_permanent_error_keeps_its_reason_for_the_dead_letter():
    assert classify(PermanentError("bad_page", "rows missing")).reason == "bad_page"
    assert classify(TaskTimeout("slow")).reason == "task_timeout"


def test_attempts_count_receives_and_carried_failures():
    # Given a message that failed twice before a re-send and is now on its third receive
    assert retry.attempt_number(carried_attempts=2, receive_count=3) == 5
    # A deferral on the first receive carries nothing new; on the third it carries two failures
    assert retry.carried_on_resend(carried_attempts=0, receive_count=1) == 0
    assert retry.carried_on_resend(carried_attempts=1, receive_count=3) == 3


def test_backoff_ceilings_grow_to_the_cap_and_delays_are_jittered_below_them():
    rng = random.Random(42)
    # When backoff is drawn for attempts 1..8 many times
    ceilings = [retry.backoff(n, 2, 60, rng).ceiling for n in range(1, 9)]
    samples = {n: [retry.backoff(n, 2, 60, rng).seconds for _ in range(200)] for n in range(1, 9)}
    # Then the ceiling doubles until the cap
    assert ceilings == [2, 4, 8, 16, 32, 60, 60, 60]
    # And every delay lies in [0, ceiling], spread out rather than all at the ceiling
    for n, delays in samples.items():
        assert all(0 <= d <= round(ceilings[n - 1]) for d in delays)
        if ceilings[n - 1] >= 8:
            assert len(set(delays)) > 5
    # And the mean grows with the attempt number until the cap
    means = [sum(samples[n]) / len(samples[n]) for n in range(1, 7)]
    assert means == sorted(means)


def test_deferral_delay_adds_jitter_within_half_the_defer_time():
    rng = random.Random(1)
    delays = {retry.deferral_delay(30, rng) for _ in range(200)}
    assert min(delays) >= 30
    assert max(delays) <= 45
    assert len(delays) > 5


def test_lease_book_ignores_expired_leases():
    # Given an item with one live lease of 3 slots and one expired lease of 2 slots
    item = {"in_use": 5, "lease_a": {"n": 3, "exp": 200.0}, "lease_b": {"n": 2, "exp": 50.0}, "pk": "quota#x#t"}
    book = LeaseBook.from_item(item)
    # Then at t=100 only the live lease counts
    assert book.live_slots(100.0) == 3
    assert [lease.id for lease in book.expired(100.0)] == ["b"]


def test_share_takes_what_is_free_and_observe_mode_takes_everything():
    book = LeaseBook(3, (budgets.Lease("a", 3, 500.0),))
    enforce = budgets.tenant_quota("engagement", "page-1", 4, "enforce")
    observe = budgets.tenant_quota("engagement", "page-1", 4, "observe")
    assert budgets.share(book, 100.0, 5, enforce) == budgets.Share(take=1, over=4)
    assert budgets.share(book, 100.0, 5, observe) == budgets.Share(take=5, over=4)
    assert observe.mode is Mode.OBSERVE


def test_dependency_budget_is_keyed_by_the_dependency_alone():
    # Two lanes using "llm" share one budget item
    assert budgets.dependency("llm", 1, "enforce").key == "dependency#llm"


def test_records_parse_without_raising():
    envelope = Envelope(id="j1", lane="bulk", tenant="t", kind="import.page", source="job", created_at=1.0, payload={})
    good = receive(
        {
            "messageId": "m1",
            "receiptHandle": "r",
            "body": envelope.to_json(),
            "attributes": {"ApproximateReceiveCount": "3", "SentTimestamp": "1500"},
        },
        "bulk",
    )
    assert good.envelope == envelope
    assert (good.receive_count, good.sent_at) == (3, 1.5)
    for body, problem in (("{", "not JSON"), (None, "no body"), (envelope.to_json(), "for lane 'bulk'")):
        bad = receive({"messageId": "m2", "body": body}, "messages")
        assert bad.envelope is None
        assert problem in (bad.problem or "")


def test_time_limit_abandons_a_slow_task_and_passes_errors_through():
    release = threading.Event()
    started = time.monotonic()
    with pytest.raises(TaskTimeout):
        run_with_limit(lambda _: release.wait(5), None, 0.2)
    assert time.monotonic() - started < 1.0
    release.set()
    with pytest.raises(KeyError):
        run_with_limit(lambda _: {}["missing"], None, 1.0)
    assert run_with_limit(lambda x: x * 2, 21, 1.0) == 42
