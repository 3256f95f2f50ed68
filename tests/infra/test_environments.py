"""Environments and the lane catalogue: typed, validated, and strict about bad names."""

from __future__ import annotations

from dataclasses import replace

import pytest

from stacks.config.environments import ENVIRONMENTS, UnknownEnvironment, get_environment
from stacks.config.lane_overrides import POLICY_FIELDS
from stacks.config.lanes import RetryPolicy, TenantQuota, catalogue


def test_unknown_environment_lists_the_valid_ones():
    with pytest.raises(UnknownEnvironment) as error:
        get_environment("production")
    assert "'production'" in str(error.value)
    assert "dev, local, prod, staging" in str(error.value)


def test_missing_environment_says_how_to_pass_one():
    with pytest.raises(UnknownEnvironment, match="-c env=<name>"):
        get_environment(None)


@pytest.mark.parametrize("name", sorted(ENVIRONMENTS))
def test_every_lane_meets_the_design_rules(name):
    env = get_environment(name)
    assert set(env.lane_names) == {"messages", "engagement", "ai", "bulk", "scheduled"}
    for lane in env.lanes:
        assert lane.reserved_concurrency >= lane.policy.max_concurrency >= 2
        assert lane.policy.max_receives >= 5
        assert lane.visibility_timeout_seconds >= 6 * lane.policy.timeout_seconds + lane.batch_window_seconds
        assert lane.policy.task_time_limit_seconds < lane.policy.timeout_seconds


def test_local_environment_runs_on_seconds_not_minutes():
    local, prod = get_environment("local"), get_environment("prod")
    for lane in local.lanes:
        assert lane.policy.timeout_seconds <= 10
        assert lane.visibility_timeout_seconds <= 62
        assert lane.policy.objective_seconds <= prod.lane(lane.name).policy.objective_seconds
    assert local.sweeper.period_seconds < 60


def test_reservations_only_where_the_account_quota_allows_them():
    for env in ENVIRONMENTS.values():
        if env.reserved_concurrency:
            # Lambda keeps 100 of the account's concurrency unreserved.
            assert env.reserved_total + env.jobs_reservation + 1 <= env.account_concurrency_quota - 100
    assert not get_environment("dev").reserved_concurrency  # new accounts start at a quota of 10


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"max_concurrency": 1}, "max_concurrency must be >= 2"),
        ({"reserved_concurrency": 3, "max_concurrency": 5}, "reserved_concurrency must be >= max_concurrency"),
        ({"max_receives": 3}, "max_receives must be >= 5"),
        ({"timeout_seconds": 901}, "timeout_seconds must be 1..900"),
        ({"batch_size": 20, "batch_window_seconds": 0}, "batch window"),
        ({"defer_seconds": 901}, "defer_seconds"),
    ],
)
def test_a_contradictory_lane_is_refused_with_its_reason(change, message):
    lane = catalogue()[0]
    policy = {name: value for name, value in change.items() if name in POLICY_FIELDS}
    rest = {name: value for name, value in change.items() if name not in POLICY_FIELDS}
    with pytest.raises(ValueError, match=message):
        replace(lane, policy=replace(lane.policy, **policy), **rest)


def test_bad_budgets_and_retry_policies_are_refused():
    with pytest.raises(ValueError, match="tenant quota"):
        TenantQuota(limit=0, protects="a partner's per-account rate limit")
    with pytest.raises(ValueError, match="names the per-tenant limit"):
        TenantQuota(limit=2, protects=" ")
    with pytest.raises(ValueError, match="retry policy"):
        RetryPolicy(base_seconds=10, cap_seconds=1)


def test_a_lane_using_an_unknown_dependency_is_refused():
    env = get_environment("dev")
    with pytest.raises(ValueError, match="unknown dependency"):
        replace(env, dependencies=())


def test_a_body_cap_the_webhook_log_cannot_hold_is_refused():
    from pipeline.domain.webhook_body import MAX_LOGGABLE_BYTES
    from stacks.config.environments import WebhookConfig

    assert WebhookConfig().max_body_bytes == 3 * 1024 * 1024
    with pytest.raises(ValueError, match="max_body_bytes"):
        WebhookConfig(max_body_bytes=MAX_LOGGABLE_BYTES + 1)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"secret_cache_seconds": 59}, "secret_cache_seconds must be 60..300"),
        ({"secret_cache_seconds": 301}, "secret_cache_seconds must be 60..300"),
        ({"secret_refresh_seconds": 0}, "secret_refresh_seconds"),
        ({"secret_cache_seconds": 60, "secret_refresh_seconds": 61}, "secret_refresh_seconds"),
    ],
    ids=["cache-too-short", "cache-too-long", "no-refresh-interval", "refresh-longer-than-cache"],
)
def test_a_secret_cache_outside_its_bounds_is_refused(change, message):
    from stacks.config.environments import WebhookConfig

    with pytest.raises(ValueError, match=message):
        WebhookConfig(**change)


def test_every_environment_keeps_raw_deliveries_shortest_and_its_periods_reach_its_functions():
    from pipeline.policy import codec
    from pipeline.settings import RetentionSettings

    for env in ENVIRONMENTS.values():
        kept = env.retention
        # Raw bodies are only a window for replays; what was made of them is the product's data.
        assert kept.raw_deliveries_days <= kept.effects_days
        parsed = codec.from_plain(RetentionSettings, kept.seconds())
        assert parsed.raw_deliveries_seconds == kept.raw_deliveries_days * 86400
        assert parsed.effects_seconds == kept.effects_days * 86400
    prod = ENVIRONMENTS["prod"].retention
    assert (prod.raw_deliveries_days, prod.jobs_days, prod.effects_days, prod.backup_days) == (7, 30, 90, 35)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"raw_deliveries_days": 3}, "as long as a lane queue keeps a message"),
        ({"jobs_days": 2}, "as long as a lane queue keeps a message"),
        ({"effects_days": 0}, "effects_days must be whole days"),
        ({"effects_days": 1.5}, "effects_days must be whole days"),
        ({"backup_days": 36}, "backup_days must be 1..35"),
    ],
    ids=["raw-shorter-than-the-queue", "jobs-shorter-than-the-queue", "no-effects", "fractional", "backup-too-long"],
)
def test_a_retention_that_would_lose_work_or_cannot_be_set_is_refused(change, message):
    from stacks.config.privacy import Retention

    with pytest.raises(ValueError, match=message):
        Retention(**change)
