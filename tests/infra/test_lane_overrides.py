"""How environments depart from the lane catalogue: typed overrides by lane name, and scaling."""

from __future__ import annotations

from dataclasses import fields

import pytest

from stacks.config.environments import ENVIRONMENTS
from stacks.config.lane_overrides import LANE_FIELDS, POLICY_FIELDS, LaneOverride, lanes_for, scaled
from stacks.config.lanes import RetryPolicy, Traffic, catalogue
from stacks.config.local_lanes import LOCAL_OVERRIDES


def test_every_override_field_is_a_field_of_the_policy_or_of_the_lane():
    for f in fields(LaneOverride):
        assert (f.name in POLICY_FIELDS) != (f.name in LANE_FIELDS), f.name


def test_an_override_changes_what_it_names_and_nothing_else():
    # Given the catalogue's AI lane and an override of its timeout, retry and peak traffic
    ai = next(lane for lane in catalogue() if lane.name == "ai")
    override = LaneOverride(timeout_seconds=10, retry=RetryPolicy(0.5, 5), traffic=Traffic(peak_per_second=2))
    # When it is applied
    changed = override.apply(ai)
    # Then those settings change, in the policy or the lane as they belong, and the rest stay
    assert (changed.policy.timeout_seconds, changed.policy.retry, changed.traffic.peak_per_second) == (
        10,
        RetryPolicy(0.5, 5),
        2,
    )
    assert changed.policy.max_concurrency == ai.policy.max_concurrency
    assert changed.reserved_concurrency == ai.reserved_concurrency
    assert changed.purpose == ai.purpose


def test_an_override_of_an_unknown_lane_is_refused_with_the_lanes_there_are():
    with pytest.raises(ValueError, match="overrides name unknown lanes mesages; lanes: messages, engagement"):
        lanes_for(catalogue(), overrides={"mesages": LaneOverride(timeout_seconds=5)})


def test_an_override_of_an_unknown_setting_is_refused():
    with pytest.raises(TypeError, match="max_concurency"):
        LaneOverride(max_concurency=4)  # type: ignore[call-arg]


def test_an_override_that_contradicts_the_catalogue_is_refused_naming_the_lane():
    # Given messages' catalogue reservation of 25, an override asking MaximumConcurrency 30
    with pytest.raises(
        ValueError, match=r"override of lane 'messages'.*reserved_concurrency must be >= max_concurrency"
    ):
        lanes_for(catalogue(), overrides={"messages": LaneOverride(max_concurrency=30)})


def test_scaling_keeps_the_reservation_s_proportion():
    messages = catalogue()[0]
    assert (messages.policy.max_concurrency, messages.reserved_concurrency) == (20, 25)

    quarter = scaled(messages, 0.25)

    assert (quarter.policy.max_concurrency, quarter.reserved_concurrency) == (5, 6)
    assert quarter.traffic.peak_per_second == messages.traffic.peak_per_second / 4
    # The SQS event source's minimum holds at any scale
    assert scaled(messages, 0.01).policy.max_concurrency == 2


def test_the_shipped_environments_are_the_catalogue_scaled_or_overridden():
    assert ENVIRONMENTS["prod"].lanes == catalogue()
    assert ENVIRONMENTS["staging"].lanes == lanes_for(catalogue(), scale=0.25)
    assert ENVIRONMENTS["local"].lanes == lanes_for(catalogue(), overrides=LOCAL_OVERRIDES)
    # What local does not override is the catalogue's
    assert ENVIRONMENTS["local"].lane("bulk").policy.tenant_quota == catalogue()[3].policy.tenant_quota
