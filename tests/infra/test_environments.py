"""Environments and the lane catalogue: typed, validated, and strict about bad names."""

from __future__ import annotations

import json
import re
from dataclasses import replace

import pytest

from pipeline.settings import ConsumerSettings
from stacks import runtime_env
from stacks.config.environments import (
    ENVIRONMENTS,
    EmailEndpoint,
    HttpsEndpoint,
    SlackChannel,
    TeamsChannel,
    UnknownEnvironment,
    get_environment,
)
from stacks.config.lane_overrides import POLICY_FIELDS
from stacks.config.lanes import RetryPolicy, TenantQuota, catalogue
from stacks.runtime_env import Resources


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
    from pipeline.settings.doors import MAX_LOGGABLE_BYTES
    from stacks.config.environments import WebhookSettings

    assert WebhookSettings().max_body_bytes == 3 * 1024 * 1024
    with pytest.raises(ValueError, match="max_body_bytes"):
        WebhookSettings(max_body_bytes=MAX_LOGGABLE_BYTES + 1)


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
    from stacks.config.environments import WebhookSettings

    with pytest.raises(ValueError, match=message):
        WebhookSettings(**change)


def test_the_sweeper_reads_for_most_of_its_period_and_its_settings_default_once():
    from stacks.config.environments import SweeperConfig, SweeperSettings

    # Given a sweeper every 5 s with a shorter grace, and one with every default
    quick, default = SweeperConfig.every(5, grace_seconds=8, patience_seconds=30), SweeperConfig.every()

    # Then each sweep reads for 85% of its period, and what is not given is the settings' own default
    assert (quick.settings.run_seconds, quick.timeout_seconds) == (4.25, 60)
    assert (quick.settings.grace_seconds, quick.settings.max_replays) == (8, SweeperSettings(run_seconds=1).max_replays)
    assert default == SweeperConfig(120, SweeperSettings(run_seconds=102.0))
    assert default.timeout_seconds == 117


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"period_seconds": 60}, r"run_seconds \(4.25\) is not its period's \(51.0 for 60 s\).*SweeperConfig.every"),
        ({"period_seconds": 0}, "sweeper period_seconds must be >= 1, got 0"),
    ],
    ids=["period-changed-alone", "no-period"],
)
def test_a_sweeper_whose_run_does_not_fit_its_schedule_is_refused(change, message):
    local = get_environment("local")
    with pytest.raises(ValueError, match=message):
        replace(local.sweeper, **change)


@pytest.mark.parametrize(
    ("callers", "message"),
    [
        ({"partner": ("acme",)}, "'partner' is not an IAM role, user or account root ARN"),
        ({"arn:aws:iam::123456789012:role/partner": ()}, "a grant needs at least one tenant"),
        ({"arn:aws:iam::123456789012:role/partner": ("Not A Tenant",)}, "not tenant ids"),
        (
            {"arn:aws:iam::123456789012:role/partner": ("acme",), "arn:aws:iam::123456789012:role/x/partner": ("b",)},
            "granted twice",
        ),
    ],
    ids=["not-an-arn", "no-tenant", "bad-tenant", "same-role-twice"],
)
def test_a_jobs_caller_the_api_could_not_match_fails_the_environment_not_the_cold_start(callers, message):
    env = get_environment("dev")
    with pytest.raises(ValueError, match=message):
        replace(env, jobs=replace(env.jobs, settings=replace(env.jobs.settings, callers=callers)))


def test_a_negative_jobs_reservation_is_refused():
    env = get_environment("prod")
    with pytest.raises(ValueError, match="jobs reserved_concurrency must be >= 0"):
        replace(env.jobs, reserved_concurrency=-1)


def test_every_environment_keeps_raw_deliveries_shortest_and_its_periods_reach_its_functions():
    from pipeline.settings import RetentionSettings, codec

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


UUID = "0b5c3c3e-8d4e-4f0a-9a55-2a7d3c1f9e11"


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda: EmailEndpoint(""), "on-call email address is empty"),
        (lambda: EmailEndpoint("on-call"), "'on-call' is not an address: write it as name@domain"),
        (lambda: EmailEndpoint("on-call@"), "'on-call@' is not an address"),
        (lambda: EmailEndpoint("@example.com"), "'@example.com' is not an address"),
        (lambda: EmailEndpoint("on call@example.com"), "'on call@example.com' is not an address"),
        (lambda: EmailEndpoint("a@b@example.com"), "'a@b@example.com' is not an address"),
        (lambda: EmailEndpoint("a@example..com"), "'a@example..com' is not an address"),
        (lambda: EmailEndpoint("On Call <oncall@example.com>"), "with no display name or angle brackets"),
        (lambda: EmailEndpoint(" oncall@example.com"), "' oncall@example.com' has spaces around it"),
        (lambda: HttpsEndpoint(""), "on-call HTTPS endpoint is empty"),
        (
            lambda: HttpsEndpoint("http://events.pagerduty.com/integration/k/enqueue"),
            "'http://events.pagerduty.com/integration/k/enqueue' must start with https://",
        ),
        (lambda: HttpsEndpoint("events.pagerduty.com/x"), "must start with https://"),
        (lambda: HttpsEndpoint("https:///integration"), "'https:///integration' names no host"),
        (lambda: HttpsEndpoint("https://example.com/a b"), "contains whitespace"),
        (lambda: SlackChannel(workspace_id="", channel_id="C0123ABCD"), "on-call Slack workspace id is empty"),
        (lambda: SlackChannel(workspace_id="T012AB3CD", channel_id=""), "on-call Slack channel id is empty"),
        (
            lambda: SlackChannel(workspace_id="t012ab3cd", channel_id="C0123ABCD"),
            "Slack workspace id 't012ab3cd' must be capital letters and digits",
        ),
        (
            lambda: SlackChannel(workspace_id="T012AB3CD", channel_id="#alerts"),
            "Slack channel id '#alerts' must be letters and digits (like C0123ABCD, the end of the channel's link), "
            "not the channel's name",
        ),
        (lambda: TeamsChannel(team_id="", channel_id="19:a@thread.tacv2", tenant_id=UUID), "Teams team id is empty"),
        (
            lambda: TeamsChannel(team_id="my-team", channel_id="19:a@thread.tacv2", tenant_id=UUID),
            "Teams team id 'my-team' must be a UUID",
        ),
        (
            lambda: TeamsChannel(team_id=UUID, channel_id="19:a@thread.tacv2", tenant_id="contoso"),
            "Teams tenant id 'contoso' must be a UUID",
        ),
        (lambda: TeamsChannel(team_id=UUID, channel_id="", tenant_id=UUID), "Teams channel id is empty"),
        (
            lambda: TeamsChannel(team_id=UUID, channel_id="General", tenant_id=UUID),
            "Teams channel id 'General' is not a channel id: copy it from the channel's link",
        ),
    ],
)
def test_a_malformed_on_call_endpoint_is_refused_saying_what_is_wrong(make, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        make()


def test_well_formed_endpoints_of_every_kind_are_taken():
    # Given the forms operators copy: an address on any host, an integration URL, the channels' ids
    assert EmailEndpoint("on-call@localhost").address == "on-call@localhost"
    assert HttpsEndpoint("https://api.opsgenie.com/v1/json/cloudwatch?apiKey=k").describe() == "https api.opsgenie.com"
    assert SlackChannel(workspace_id="T012AB3CD", channel_id="C0123ABCD").channel_id == "C0123ABCD"
    # A Teams channel id as in the link, or decoded: Chatbot is given the encoded form either way
    encoded = TeamsChannel(team_id=UUID, channel_id="19%3aa1b2%40thread.tacv2", tenant_id=UUID)
    decoded = TeamsChannel(team_id=UUID, channel_id="19:a1b2@thread.tacv2", tenant_id=UUID)
    assert decoded.chatbot_channel_id == "19%3Aa1b2%40thread.tacv2"
    assert encoded.key == decoded.key


def test_an_endpoint_listed_twice_is_refused():
    prod = ENVIRONMENTS["prod"]
    with pytest.raises(ValueError, match=re.escape("prod: on-call email OnCall@example.com is listed twice")):
        replace(prod, on_call=(EmailEndpoint("oncall@example.com"), EmailEndpoint("OnCall@example.com")))


def test_on_call_takes_endpoints_only():
    prod = ENVIRONMENTS["prod"]
    with pytest.raises(ValueError, match=re.escape("prod: on_call takes EmailEndpoint, HttpsEndpoint")):
        replace(prod, on_call=("oncall@example.com",))  # type: ignore[arg-type]


def test_a_chat_channel_where_chatbot_is_not_offered_is_refused():
    prod = ENVIRONMENTS["prod"]
    with pytest.raises(ValueError, match=re.escape("needs AWS Chatbot, which cn-north-1 does not offer")):
        replace(prod, region="cn-north-1", on_call=(SlackChannel(workspace_id="T012AB3CD", channel_id="C0123ABCD"),))


def test_local_pages_one_local_inbox_and_the_real_environments_nobody_yet():
    assert get_environment("local").on_call == (EmailEndpoint("on-call@localhost"),)
    for name in ("dev", "staging", "prod"):
        assert get_environment(name).on_call == ()


@pytest.mark.parametrize("name", sorted(ENVIRONMENTS))
def test_every_lane_that_calls_a_model_has_a_real_one_and_no_option_selects_a_simulator(name):
    env = ENVIRONMENTS[name]
    # Each lane whose task calls the model has one in the environment's config, sent to its consumer
    for lane in env.lanes:
        assert (env.model(lane.name) is not None) == (lane.policy.task in ("ai", "engagement")), lane.name
        assert not [option for option, _ in lane.policy.task_options if option.startswith("vendor_")], lane.name
    deployed = Resources("w", "j", "s", "d", {n: n for n in env.lane_names}, {n: n for n in env.lane_names}, "m", "k")
    for model in env.models:
        variables = runtime_env.consumer(env, env.lane(model.lane), deployed, json.dumps)
        settings = ConsumerSettings.from_environ({**variables, "AWS_REGION": "eu-west-1"})
        assert settings.model == model.settings


def test_a_model_for_a_lane_the_environment_lacks_or_named_twice_is_refused():
    from stacks.config.models import reply_model

    with pytest.raises(ValueError, match="models must each name one of its lanes, once"):
        replace(ENVIRONMENTS["dev"], models=(reply_model(), reply_model()))
    with pytest.raises(ValueError, match="models must each name one of its lanes, once"):
        replace(ENVIRONMENTS["dev"], models=(replace(reply_model(), lane="nowhere"),))


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"max_tokens": 0}, "max_tokens must be 1..8192"),
        ({"temperature": 1.5}, "temperature must be 0..1"),
        ({"system_prompt": " "}, "system_prompt must be set"),
        ({"model_id": ""}, "model_id must be set"),
    ],
)
def test_a_model_setting_out_of_bounds_is_refused(change, message):
    from stacks.config.models import reply_model

    with pytest.raises(ValueError, match=message):
        replace(reply_model().settings, **change)
