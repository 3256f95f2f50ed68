"""A reply Meta refused as over a rate limit comes back no sooner than Meta asks, through the
message's visibility: the pair rate (131056) after 6 s or more, throughput (130429) after a second
or more and exponentially later each attempt, full jitter between. The lane's usual backoff starts
from zero, and SQS's whole seconds rounded its first draws down to a retry at once."""

from __future__ import annotations

import pytest

from pipeline.domain.dependencies import meta_send as ms
from pipeline.metric_names import Outcome
from tests.unit.consumer.pipeline_harness import Pipeline, lane_settings
from tests.unit.consumer.test_pipeline_failures import raising
from tests.unit.domain.test_rate_slowdown import PAIR_RATE, THROUGHPUT

RECORDS = 40


def _retried(body: dict, *, receives: int, base: float = 0.5, cap: float = 4.0) -> list:
    """Every record of a batch refused by Meta with `body`, on its `receives`-th receive."""
    lane = lane_settings(retry_base_seconds=base, retry_cap_seconds=cap, batch_size=RECORDS)
    p = Pipeline(task=raising(ms.error_for(400, body)), lane=lane)
    p.run([p.record(p.job(f"job-{n}"), receives=receives) for n in range(RECORDS)])
    outcomes = [outcome for _, outcome in p.observer.outcomes]
    assert {outcome.outcome for outcome in outcomes} == {Outcome.RETRIED}
    return outcomes


def test_a_pair_rate_refusal_is_retried_after_metas_six_seconds_or_more_never_at_once():
    # Given a lane whose own backoff would start from nothing (0.5 s base, 4 s cap)
    # When Meta refuses its replies for the pair rate on their first attempt
    outcomes = _retried(PAIR_RATE, receives=1)
    # Then each comes back between 6 and 12 s later, spread over that span
    seconds = [outcome.visibility_seconds for outcome in outcomes]
    assert min(seconds) >= 6
    assert max(seconds) <= 12
    assert len(set(seconds)) >= 4
    assert {outcome.error.reason for outcome in outcomes} == {"meta_rate_limited"}


@pytest.mark.parametrize(("receives", "ceiling"), [(1, 4), (2, 8), (3, 16), (4, 32)])
def test_a_throughput_refusal_backs_off_exponentially_from_a_second(receives: int, ceiling: int):
    # Given a lane whose own backoff starts from nothing (0.5 s base) and is capped at a minute
    # When Meta refuses replies as over the number's throughput, attempt after attempt
    outcomes = _retried(THROUGHPUT, receives=receives, cap=60.0)
    # Then none comes back at once, and each attempt's ceiling doubles from Meta's few seconds
    seconds = [outcome.visibility_seconds for outcome in outcomes]
    assert min(seconds) >= 1
    assert max(seconds) <= ceiling
    assert {outcome.detail["backoff_ceiling"] for outcome in outcomes} == {ceiling}
