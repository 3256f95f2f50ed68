"""Admission as properties: predicted wait = backlog / drain rate, shed exactly when that is
over the objective, and Retry-After never shorter than the predicted wait."""

from __future__ import annotations

import math

from hypothesis import given
from hypothesis import strategies as st

from pipeline.domain.jobs import admission
from pipeline.domain.jobs.admission import LaneProfile, LaneSnapshot

PROFILE = LaneProfile(name="bulk", objective_seconds=60, slots=10, capacity_per_second=0.5)

snapshots = st.builds(
    LaneSnapshot,
    backlog=st.integers(min_value=0, max_value=100_000),
    in_flight=st.integers(min_value=0, max_value=100),
    drained=st.none() | st.integers(min_value=0, max_value=100_000),
    window_seconds=st.floats(min_value=60, max_value=70),
)
profiles = st.builds(
    LaneProfile,
    name=st.just("lane"),
    objective_seconds=st.floats(min_value=1, max_value=3600),
    slots=st.integers(min_value=1, max_value=100),
    capacity_per_second=st.floats(min_value=0.01, max_value=1000),
)


@given(snapshot=snapshots, profile=profiles)
def test_shed_exactly_when_the_predicted_wait_exceeds_the_objective(snapshot, profile):
    decision = admission.decide(snapshot, profile)
    rate = admission.drain_rate(snapshot, profile)
    wait = snapshot.backlog / rate if rate > 0 else (0 if snapshot.backlog == 0 else math.inf)

    assert decision.admitted == (wait <= profile.objective_seconds)
    if not decision.admitted:
        assert decision.retry_after_seconds is not None
        assert 1 <= decision.retry_after_seconds <= admission.MAX_RETRY_AFTER_SECONDS
        assert decision.retry_after_seconds >= min(wait, admission.MAX_RETRY_AFTER_SECONDS)


@given(snapshot=snapshots, profile=profiles)
def test_work_that_fits_the_free_slots_is_never_estimated_below_capacity(snapshot, profile):
    if snapshot.backlog + snapshot.in_flight <= profile.slots:
        assert admission.drain_rate(snapshot, profile) >= profile.capacity_per_second


@given(snapshot=snapshots, profile=profiles)
def test_a_backlog_beyond_the_slots_is_judged_by_what_actually_drains(snapshot, profile):
    # (the strategy's windows are all mature: 60 s and more)
    if snapshot.backlog + snapshot.in_flight > profile.slots and snapshot.drained is not None:
        assert admission.drain_rate(snapshot, profile) == snapshot.drained / snapshot.window_seconds


def test_a_lane_that_only_just_started_working_is_not_shed_for_its_idle_past():
    # Given a burst at an idle lane: 3 finished in the 5 s since its first bucket, 30 waiting
    young = LaneSnapshot(backlog=30, in_flight=10, drained=3, window_seconds=5)

    # Then its configured capacity stands until the measurement matures
    assert admission.drain_rate(young, PROFILE) == max(3 / 5, PROFILE.capacity_per_second)
    mature = LaneSnapshot(backlog=30, in_flight=10, drained=3, window_seconds=admission.MEASUREMENT_MATURE_SECONDS)
    assert admission.drain_rate(mature, PROFILE) == 3 / admission.MEASUREMENT_MATURE_SECONDS


def test_a_dependency_bound_lane_sheds_although_its_consumers_have_spare_slots():
    # Given 100 waiting (most of them deferred by the vendor budget), 1 in flight of 10 slots,
    # and 6 finished in the last minute
    snapshot = LaneSnapshot(backlog=100, in_flight=1, drained=6, window_seconds=60)

    decision = admission.decide(snapshot, PROFILE)

    # Then the lane is judged by its 0.1/s, not by its configured 0.5/s
    assert decision.drain_rate == 0.1
    assert (decision.admitted, decision.retry_after_seconds) == (False, 900)


def test_a_stalled_lane_sheds_with_the_longest_retry_after():
    # Given a paused mapping: work waiting, none in flight, nothing finished in the window
    snapshot = LaneSnapshot(backlog=30, in_flight=0, drained=None, window_seconds=65)

    decision = admission.decide(snapshot, PROFILE)

    assert decision.drain_rate == 0.0
    assert (decision.admitted, decision.retry_after_seconds) == (False, admission.MAX_RETRY_AFTER_SECONDS)


def test_no_measurement_falls_back_to_the_configured_capacity():
    snapshot = LaneSnapshot(backlog=10, in_flight=50, drained=None, window_seconds=60)

    assert admission.drain_rate(snapshot, PROFILE) == PROFILE.capacity_per_second


def test_a_saturated_lane_is_judged_by_what_it_actually_drains():
    snapshot = LaneSnapshot(backlog=100, in_flight=10, drained=60, window_seconds=60)

    decision = admission.decide(snapshot, PROFILE)

    assert decision.drain_rate == 1.0
    assert (decision.admitted, decision.retry_after_seconds) == (False, 100)


def test_retry_after_is_the_drain_time_rounded_up():
    snapshot = LaneSnapshot(backlog=61, in_flight=5, drained=None, window_seconds=60)

    decision = admission.decide(snapshot, LaneProfile("l", 60, 10, 0.6))

    assert decision.retry_after_seconds == math.ceil(61 / 0.6)


def test_an_unreadable_lane_is_admitted():
    assert admission.decide(None, PROFILE).admitted


def test_drain_buckets_cover_the_last_minute_and_the_current_partial_bucket():
    starts, window = admission.drain_window(1_000_005.0)

    assert starts == [1_000_000, 999_990, 999_980, 999_970, 999_960, 999_950, 999_940]
    assert window == 65.0
    assert admission.drain_key("bulk", 1_000_000) == "drain#bulk#1000000"


# Boundaries: each names the exact point where the rule changes.


def test_an_empty_lane_admits_with_no_wait_and_reports_its_best_known_rate():
    # Given nothing waiting on a lane that finished 120 messages in the last minute
    snapshot = LaneSnapshot(backlog=0, in_flight=0, drained=120, window_seconds=60)

    decision = admission.decide(snapshot, PROFILE)

    # Then the job is admitted with no predicted wait, at the measured 2/s (above the 0.5/s configured)
    assert decision == admission.Decision(admitted=True, predicted_wait_seconds=0.0, drain_rate=2.0)


def test_an_empty_lane_admits_even_with_no_capacity_to_speak_of():
    # Given nothing waiting, nothing measured and a configured capacity of zero
    idle = LaneProfile(name="l", objective_seconds=60, slots=10, capacity_per_second=0.0)

    decision = admission.decide(LaneSnapshot(backlog=0, in_flight=0, drained=None, window_seconds=60), idle)

    # Then nothing is ahead of the job, so it is admitted rather than told to wait 900 s
    assert (decision.admitted, decision.predicted_wait_seconds, decision.retry_after_seconds) == (True, 0.0, None)


def test_an_unreadable_lane_reports_its_configured_capacity():
    assert admission.decide(None, PROFILE) == admission.Decision(
        admitted=True, predicted_wait_seconds=0.0, drain_rate=PROFILE.capacity_per_second
    )


def test_a_single_waiting_message_is_predicted_and_can_be_shed():
    # Given one message waiting behind one in flight on a lane of one slot that finished nothing
    # in a mature window
    one_slot = LaneProfile(name="l", objective_seconds=60, slots=1, capacity_per_second=0.5)
    stalled = LaneSnapshot(backlog=1, in_flight=1, drained=0, window_seconds=60)
    draining = LaneSnapshot(backlog=1, in_flight=1, drained=30, window_seconds=60)

    # When each is asked to admit one more job
    shed, admitted = admission.decide(stalled, one_slot), admission.decide(draining, one_slot)

    # Then the stalled lane sheds it, and the draining one predicts 1 / 0.5 s = 2 s
    assert (shed.admitted, shed.retry_after_seconds) == (False, admission.MAX_RETRY_AFTER_SECONDS)
    assert admitted == admission.Decision(admitted=True, predicted_wait_seconds=2.0, drain_rate=0.5)


def test_work_that_exactly_fills_the_slots_is_estimated_at_capacity():
    # Given 10 slots holding 4 waiting and 6 in flight, and a measured pace below capacity
    full = LaneSnapshot(backlog=4, in_flight=6, drained=6, window_seconds=60)
    one_more = LaneSnapshot(backlog=5, in_flight=6, drained=6, window_seconds=60)

    # Then filling the slots exactly is still judged by capacity; one more is judged by the pace
    assert admission.drain_rate(full, PROFILE) == PROFILE.capacity_per_second
    assert admission.drain_rate(one_more, PROFILE) == 0.1


def test_work_that_fits_the_slots_with_nothing_measured_is_estimated_at_capacity_even_below_one_per_second():
    snapshot = LaneSnapshot(backlog=2, in_flight=0, drained=None, window_seconds=60)

    assert admission.drain_rate(snapshot, PROFILE) == 0.5


def test_one_message_in_flight_means_the_lane_is_starting_not_stalled():
    # Given more waiting than the slots hold, nothing finished yet, and exactly one in flight
    starting = LaneSnapshot(backlog=30, in_flight=1, drained=None, window_seconds=65)
    stalled = LaneSnapshot(backlog=30, in_flight=0, drained=None, window_seconds=65)

    # Then the one in flight earns the configured capacity; none in flight is a stall
    assert admission.drain_rate(starting, PROFILE) == PROFILE.capacity_per_second
    assert admission.drain_rate(stalled, PROFILE) == 0.0


def test_a_measurement_that_starts_this_instant_counts_as_none_yet():
    # Given a first drain bucket starting exactly now (a window of zero seconds)
    snapshot = LaneSnapshot(backlog=30, in_flight=2, drained=4, window_seconds=0)

    # Then the rate is the configured capacity (no division by zero)
    assert admission.drain_rate(snapshot, PROFILE) == PROFILE.capacity_per_second


def test_a_measurement_under_one_second_old_still_counts():
    # Given 1 finished in the half second since the first bucket, with everything fitting the slots
    snapshot = LaneSnapshot(backlog=2, in_flight=1, drained=1, window_seconds=0.5)

    # Then its pace of 2/s beats the configured 0.5/s
    assert admission.drain_rate(snapshot, PROFILE) == 2.0


def test_retry_after_under_a_second_is_one_second():
    # Given a lane with a 0.5 s objective whose two waiting messages drain at 2.5/s (0.8 s)
    fast = LaneProfile(name="l", objective_seconds=0.5, slots=1, capacity_per_second=2.5)
    snapshot = LaneSnapshot(backlog=2, in_flight=1, drained=150, window_seconds=60)

    decision = admission.decide(snapshot, fast)

    # Then it is shed and told to come back in 1 s (Retry-After is whole seconds, rounded up)
    assert (decision.admitted, decision.predicted_wait_seconds, decision.retry_after_seconds) == (False, 0.8, 1)
