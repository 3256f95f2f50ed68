"""Backoff and deferral delays at their edges: full jitter from zero to the ceiling, an odd base,
and SQS's 900 s cap on a message's delay."""

from __future__ import annotations

import random

from pipeline.domain.consumer import retry

DRAWS = 2000


def test_full_jitter_spans_zero_to_the_ceiling():
    # Given many backoffs drawn for a first attempt with a 2 s base
    rng = random.Random(7)

    delays = {retry.backoff(1, 2, 60, rng).seconds for _ in range(DRAWS)}

    # Then some come back at once and some wait the whole ceiling (whole seconds, rounded)
    assert delays == {0, 1, 2}


def test_an_odd_base_doubles_exactly_until_the_cap():
    rng = random.Random(3)

    ceilings = [retry.backoff(n, 3, 100, rng).ceiling for n in range(0, 9)]

    # Attempt 0 (a copy that never failed) is treated as the first
    assert ceilings == [3, 3, 6, 12, 24, 48, 96, 100, 100]


def test_a_deferral_comes_back_after_the_defer_time_plus_up_to_half_again():
    # Given a 30 s deferral drawn many times
    rng = random.Random(11)

    delays = {retry.deferral_delay(30, rng) for _ in range(DRAWS)}

    # Then every whole second from 30 to 45 occurs, and nothing else
    assert delays == set(range(30, 46))


def test_an_odd_deferral_rounds_its_jitter_down():
    rng = random.Random(5)

    delays = {retry.deferral_delay(31, rng) for _ in range(DRAWS)}

    assert delays == set(range(31, 47))


def test_a_one_second_deferral_still_spreads_a_flood():
    rng = random.Random(2)

    assert {retry.deferral_delay(1, rng) for _ in range(200)} == {1, 2}


def test_no_deferral_delay_means_at_once():
    rng = random.Random(2)

    assert [retry.deferral_delay(seconds, rng) for seconds in (0, -5)] == [0, 0]


def test_a_deferral_never_asks_sqs_for_more_than_its_900_s_delay_cap():
    # Given a lane whose defer time is already at SQS's limit, and one just under it
    rng = random.Random(13)

    at_cap = {retry.deferral_delay(900, rng) for _ in range(200)}
    near_cap = {retry.deferral_delay(800, rng) for _ in range(DRAWS)}

    # Then no delay passes 900 s, and the jitter below it is kept
    assert at_cap == {900}
    assert max(near_cap) == 900
    assert min(near_cap) == 800
