"""Every warning `lanectl plan` gives fires on a plausible mistake in a real catalogue or
environment, and the shipped environments give none."""

from __future__ import annotations

from dataclasses import replace

import pytest

from ops.cost.plan import run_plan
from ops.output import Console
from stacks.config.doors import JobsConfig
from stacks.config.environments import ENVIRONMENTS, DependencyBudget, Environment
from stacks.config.lane_overrides import LaneOverride, lanes_for
from stacks.config.lanes import LLM_DEPENDENCY, RetryPolicy, Traffic


def _warnings(env: Environment, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    code = run_plan(env, Console(), utilisation=0.7, average_fraction=0.25, strict=True)
    out = " ".join(capsys.readouterr().out.split())
    return code, out


def _overridden(name: str, **overrides: LaneOverride) -> Environment:
    env = ENVIRONMENTS[name]
    return replace(env, lanes=lanes_for(env.lanes, overrides=overrides))


@pytest.mark.parametrize("name", sorted(ENVIRONMENTS))
def test_the_shipped_environments_give_no_warnings(name, capsys):
    code, out = _warnings(ENVIRONMENTS[name], capsys)

    assert code == 0, out
    assert "no warnings: the configuration is consistent with its traffic assumptions" in out


def test_an_objective_shorter_than_the_service_time(capsys):
    # Given an AI lane promised in 2 s whose vendor answers in 4
    env = _overridden("prod", ai=LaneOverride(objective_seconds=2))

    code, out = _warnings(env, capsys)

    assert code == 1
    assert "ai: objective 2 s is shorter than one message's service time (4 s): every message misses it" in out


def test_a_service_time_over_the_task_time_limit(capsys):
    # Given the AI lane's function timeout cut to 5 s while a turn takes 4: a task may run 3 s
    env = _overridden("prod", ai=LaneOverride(timeout_seconds=5))

    code, out = _warnings(env, capsys)

    assert code == 1
    assert "ai: one message's service time (4 s) is over the task time limit 3 s that the timeout 5 s leaves" in out


def test_retries_that_outlast_the_queue_retention(capsys):
    # Given a bulk lane told to wait out a day-long vendor outage: 12 h backoffs, 10 receives
    bulk = ENVIRONMENTS["prod"].lane("bulk")
    env = replace(
        ENVIRONMENTS["prod"],
        lanes=tuple(
            replace(lane, policy=replace(bulk.policy, max_receives=10, retry=RetryPolicy(30, 43_200)))
            if lane.name == "bulk"
            else lane
            for lane in ENVIRONMENTS["prod"].lanes
        ),
    )

    code, out = _warnings(env, capsys)

    assert code == 1
    assert (
        "bulk: 10 receives of up to 12.0 h each (visibility timeout or retry cap) outlast the queue's 4-day "
        "retention: SQS can delete a failing message before it reaches the DLQ" in out
    )


def test_a_tenant_cap_that_cannot_bind(capsys):
    # Given bulk's cap raised to 6 pages per tenant, over the lane's 5 invocations, each of which
    # runs a tenant's records one after another
    bulk = ENVIRONMENTS["prod"].lane("bulk")
    loose = replace(bulk.policy, tenant_quota=replace(bulk.policy.tenant_quota, limit=6))
    env = replace(
        ENVIRONMENTS["prod"],
        lanes=tuple(
            replace(lane, policy=loose) if lane.name == "bulk" else lane for lane in ENVIRONMENTS["prod"].lanes
        ),
    )

    code, out = _warnings(env, capsys)

    assert code == 1
    assert "bulk: the tenant cap 6 is over the lane's MaximumConcurrency 5" in " ".join(out.split())


def test_maximum_concurrency_under_the_busy_slots(capsys):
    # Given a campaign season: engagement's peak forecast raised to 100 comments a second
    env = _overridden("prod", engagement=LaneOverride(traffic=Traffic(peak_per_second=100)))

    code, out = _warnings(env, capsys)

    assert code == 1
    assert "engagement: MaximumConcurrency 12 is under the 30.0 busy slots at peak" in out


def test_maximum_concurrency_under_the_slots_for_the_target_utilisation(capsys):
    # Given the messages lane's peak raised so 20 slots are busy 90 % of the time at peak
    env = _overridden("prod", messages=LaneOverride(traffic=Traffic(peak_per_second=360)))

    code, out = _warnings(env, capsys)

    assert code == 1
    assert "messages: MaximumConcurrency 20 is under the 26 slots for the target utilisation" in out


def test_a_shared_limit_over_the_vendor_quota(capsys):
    # Given a model vendor that grants 40 concurrent calls, and the budget left at 45
    env = replace(ENVIRONMENTS["prod"], dependencies=(DependencyBudget(LLM_DEPENDENCY, limit=45, vendor_quota=40),))

    code, out = _warnings(env, capsys)

    assert code == 1
    assert "llm: the shared limit 45 is over the vendor quota 40" in out


def test_calls_busy_at_peak_over_the_shared_limit(capsys):
    # Given the budget lowered to 20 while AI turns keep 24 calls busy at peak (6/s x 4 s) and triage 7.5
    env = replace(ENVIRONMENTS["prod"], dependencies=(DependencyBudget(LLM_DEPENDENCY, limit=20, vendor_quota=50),))

    code, out = _warnings(env, capsys)

    assert code == 1
    assert "llm: 31.5 calls busy at peak exceed the shared limit 20" in out


def test_lanes_over_the_account_quota_without_reservations(capsys):
    # Given staging on a new account whose quota was never raised from 10
    env = replace(ENVIRONMENTS["staging"], account_concurrency_quota=10)

    code, out = _warnings(env, capsys)

    assert code == 1
    lanes = sum(lane.policy.max_concurrency for lane in env.lanes)
    assert f"account: the lanes' MaximumConcurrency sums to {lanes}, over the account quota 10" in out


def test_a_jobs_api_reservation_under_its_throttle(capsys):
    # Given prod's jobs API reservation cut to 5 while both routes at 200/s keep 12 invocations busy
    env = replace(ENVIRONMENTS["prod"], jobs=replace(ENVIRONMENTS["prod"].jobs, reserved_concurrency=5))

    code, out = _warnings(env, capsys)

    assert code == 1
    assert "jobs API: a reservation of 5 is under the 12.0 invocations busy with both jobs routes" in out


def test_reservations_over_what_the_account_may_reserve(capsys):
    # Given prod deployed to an account with the default quota of 200 (100 of it reservable)
    env = replace(ENVIRONMENTS["prod"], account_concurrency_quota=200)

    code, out = _warnings(env, capsys)

    assert code == 1
    reserved = env.reserved_total + env.jobs_reservation + 2  # and the sweeper and the lane probe
    assert f"account: {reserved} reserved is over the 100 reservable: the deploy fails" in out


def test_reservations_turned_on_for_a_scaled_environment_keep_the_catalogue_s_proportions(capsys):
    # Given staging with reservations on: its lanes reserve what the catalogue does, scaled
    env = replace(ENVIRONMENTS["staging"], reserved_concurrency=True, jobs=JobsConfig(reserved_concurrency=25))

    code, out = _warnings(env, capsys)

    # Then messages reserves 6 of its 5 (the catalogue's 25 for 20), and the plan adds them up
    assert code == 0, out
    assert env.lane("messages").reserved_concurrency == 6
    assert f"reserved concurrency {env.reserved_total + 25 + 2} (lanes {env.reserved_total}" in out
