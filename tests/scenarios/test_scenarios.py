"""The queueing scenarios, small: each runs on a fresh local runtime through HTTP and real
queue semantics, beside its naive baseline, and asserts the direction of the difference (never
an absolute time: the machine is shared). `make scenarios` runs the full-size versions."""

from __future__ import annotations

from types import ModuleType

import pytest

from bench.scenarios import (
    SCENARIOS,
    s01_fairness,
    s02_bulkheads,
    s03_poison,
    s04_dependency,
    s05_spike,
    s06_lost_enqueue,
    s07_lease_expiry,
    s08_duplicates,
    s09_paced_recovery,
    s10_cost,
    s11_recovery,
    s12_meta_retries,
    s13_send_timeouts,
    s14_lane_pause,
    s15_quiet_accounts,
)

pytestmark = [pytest.mark.xdist_group("scenarios"), pytest.mark.slow]


def _explain(result) -> str:
    return result.text()


def test_every_scenario_has_its_test_here():
    # Given the scenarios bench/scenarios finds (its sNN_*.py files)
    # When the modules these tests run are collected
    tested = {v for v in globals().values() if isinstance(v, ModuleType) and v.__name__ in _names(SCENARIOS)}
    # Then each scenario is one of them: a new scenario file without its test fails here
    assert sorted(m.__name__ for m in tested) == sorted(_names(SCENARIOS))


def _names(scenarios) -> set[str]:
    return {module.__name__ for module in scenarios.values()}


def test_quiet_tenants_wait_fewer_service_times_than_under_a_shared_fifo(harness):
    # Given one page's comment campaign, then one comment from each of two quiet pages
    # When the lane runs as the fair queue it is, and again as a plain shared FIFO
    result = s01_fairness.run(harness, s01_fairness.QUICK)
    # Then every comment is triaged, and the quiet pages' worst wait is shorter with the quota
    assert result.passed, _explain(result)
    assert max(result.data["fair_small"]) < max(result.data["fifo_small"]), _explain(result)


def test_interactive_messages_do_not_wait_behind_an_import_on_their_own_lane(harness):
    # Given customers' messages arriving steadily and an import flooding in
    # When the import has its own lane, and again when it shares the messages lane
    result = s02_bulkheads.run(harness, s02_bulkheads.QUICK)
    # Then the interactive median wait during the flood is lower with the bulkhead
    assert result.passed, _explain(result)
    own, shared = sorted(result.data["own_flood"]), sorted(result.data["shared_flood"])
    assert own
    assert shared
    assert own[len(own) // 2] < shared[len(shared) // 2], _explain(result)


def test_a_poison_job_costs_at_most_max_receives_then_dead_letters_and_alarms(harness):
    # Given one job the model always rejects among normal jobs
    result = s03_poison.run(harness, s03_poison.QUICK)
    # Then it is tried at most max-receives times, dead-lettered, and the DLQ alarm fires; a
    # consumer that retries at once and forever goes past max receives and raises nothing
    assert result.passed, _explain(result)
    assert 0 < result.data["attempts"] <= result.data["max_receives"]
    assert result.data["dead_lettered"]
    assert result.data["alarm"]
    assert result.data["naive_attempts"] > result.data["max_receives"]
    assert result.data["naive_dead"] == 0


def test_a_slow_vendor_never_sees_more_calls_than_the_budget_and_nothing_is_lost(harness):
    # Given two lanes calling the model while it slows down tenfold
    result = s04_dependency.run(harness, s04_dependency.QUICK)
    # Then calls in progress at the vendor never exceed the budget, every item completes, the backlog
    # drains, and in observe mode the vendor sees more than its quota
    assert result.passed, _explain(result)
    assert result.data["peak"] <= result.data["budget"] < result.data["observed_peak"]
    assert result.data["complete"]
    assert result.data["drained"]
    assert result.data["dead"] == 0


def test_deadlines_spend_the_model_on_callers_still_waiting_during_a_spike_with_retries(harness):
    # Given a spike of AI jobs beyond the lane's capacity, whose callers give up and post again
    result = s05_spike.run(harness, s05_spike.QUICK)
    # Then with deadlines the work of callers who left is dropped unrun, and a larger share of the
    # model's calls reaches a caller still waiting than without deadlines
    assert result.passed, _explain(result)
    ours_share, naive_share = result.data["share"]
    assert ours_share > naive_share


def test_deliveries_whose_enqueue_failed_are_processed_once_by_the_sweeper_only(harness):
    # Given deliveries logged while their send to the lane fails
    result = s06_lost_enqueue.run(harness, s06_lost_enqueue.QUICK)
    # Then the sweeper gets every one processed exactly once; without it none is processed
    assert result.passed, _explain(result)
    assert result.data["stored"] == result.data["lost"]
    assert result.data["once"]
    assert result.data["naive_stored"] == 0
    assert result.data["pending"] == result.data["lost"]


def test_an_sqs_outage_is_recovered_within_its_length_and_nothing_expires(harness):
    # Given deliveries and jobs whose sends fail for a while, every sender's and the sweeper's alike
    result = s11_recovery.run(harness, s11_recovery.QUICK)
    # Then once SQS returns the sweeper replays them faster than the door marked them, every one is
    # processed within the outage's length, and none expires unprocessed
    assert result.passed, _explain(result)
    assert result.data["processed"] == result.data["lost"] == result.data["unsent"]
    assert result.data["jobs_done"] == result.data["jobs"] > 0
    assert result.data["expired"] == 0
    assert result.data["replay_rate"] >= result.data["mark_rate"]
    assert result.data["recovered_within"] <= result.data["outage_seconds"]


def test_a_turn_outliving_its_visibility_is_delivered_twice_but_runs_and_writes_once(harness):
    # Given a reply turn slower than its message's visibility timeout
    result = s07_lease_expiry.run(harness, s07_lease_expiry.QUICK)
    # Then its message is delivered more than once, the model is called once, and each
    # conversation has exactly one reply
    assert result.passed, _explain(result)
    assert result.data["deliveries"] > result.data["turns"] == result.data["runs"]
    assert all(count == 1 for count in result.data["effects"].values())


def test_five_copies_of_every_delivery_and_job_make_one_effect_each(harness):
    # Given every webhook sent five times and every job posted five times with one key
    result = s08_duplicates.run(harness, s08_duplicates.QUICK)
    # Then one log row, one stored message and one job per original
    assert result.passed, _explain(result)
    assert result.data["once_hooks"]
    assert result.data["once_jobs"]
    assert result.data["rows"] == result.data["deliveries"]


def test_a_paced_redrive_keeps_to_its_rate_and_keeps_the_lane_shallower(harness):
    # Given dead letters from a model outage, redriven with lanectl at a set rate, and again unpaced
    result = s09_paced_recovery.run(harness, s09_paced_recovery.QUICK)
    # Then the paced move keeps to its rate, everything is triaged, and the lane stays shallower
    assert result.passed, _explain(result)
    assert 0 < result.data["rate"] <= result.data["asked"] * 1.1
    assert result.data["paced_depth"] < result.data["unpaced_depth"]
    assert result.data["complete"]


def test_requests_and_write_units_are_counted_for_both_designs(harness):
    # Given webhooks through this pipeline and through the common design, metered alike
    result = s10_cost.run(harness, s10_cost.QUICK)
    # Then every webhook is processed and both designs' write units and costs are counted
    assert result.passed, _explain(result)
    assert result.data["ours_wcu"] > 0
    assert result.data["common_wcu"] > 0
    assert result.data["total"]["ours"] > 0
    assert result.data["total"]["common"] > 0
    # and a webhook writes its row and its message, with no index entry, and no note of its account
    # at the local clock's pace: about two write units, where the index and the notes made it 3.6
    assert result.data["index_entries"] == 0
    assert result.data["ours_wcu"] <= 2.5


def test_metas_retries_bring_back_what_a_failing_door_refused_until_meta_disables_the_subscription(harness):
    # Given a Page's comments delivered by Meta's sender while the door answers 500 for a while
    # When the outage is half of Meta's hour, longer than the hour, and half an hour without retries
    result = s12_meta_retries.run(harness, s12_meta_retries.QUICK)
    # Then with retries every comment is stored; past the hour the subscription is disabled; without
    # retries the outage's comments are lost; and the silence after the disable pages
    assert result.passed, _explain(result)
    assert result.data["ours_stored"] == result.data["ours_sent"], _explain(result)
    assert result.data["ours_lost"] == 0, _explain(result)
    assert result.data["past_disabled"] is True, _explain(result)
    assert result.data["plain_lost"] > 0, _explain(result)
    assert result.data["quiet_alarm_fired"] is True, _explain(result)
    assert result.data["quiet_pages"] >= 1, _explain(result)


def test_a_turn_never_gets_two_replies_when_answers_are_lost_and_unconfirmed_turns_page(harness):
    # Given Meta accepting every reply but losing the answer to half of them, and half the statuses
    # When the ai lane sends the turns' replies
    result = s13_send_timeouts.run(harness, s13_send_timeouts.QUICK)
    # Then no turn is answered twice (a resend on timeout would have), and the unconfirmed are alarmed
    assert result.passed, _explain(result)
    assert max(result.data["per_turn"].values()) == 1, _explain(result)
    assert max(result.data["naive_per_turn"].values()) == 2, _explain(result)
    assert result.data["states"].get("unanswered", 0) >= 1, _explain(result)
    assert result.data["dead_letters"] == 0, _explain(result)


def test_a_revoked_token_pauses_the_lane_and_the_probe_brings_it_back_with_nothing_lost(harness):
    # Given AI turns arriving while Meta's token is revoked for a few seconds, then restored
    result = s14_lane_pause.run(harness, s14_lane_pause.QUICK)
    # Then the lane paused itself, nothing reached the DLQ, every turn got exactly one reply, and the
    # probe resumed the lane on its ramp from 2 up to the lane's MaximumConcurrency
    assert result.passed, _explain(result)
    assert result.data["dead_letters"] == 0, _explain(result)
    assert result.data["states"] == {"sent": result.data["turns"]}, _explain(result)
    assert max(result.data["per_turn"].values()) == 1, _explain(result)
    assert result.data["paused_after"] is not None, _explain(result)
    assert result.data["resumed_after"] is not None, _explain(result)
    assert result.data["ramp"][0][1] == 2, _explain(result)
    assert result.data["ramp"][-1][1] == result.data["target"], _explain(result)
    assert result.data["token_checks"] >= 2, _explain(result)


def test_a_steady_account_going_quiet_pages_naming_it_alone_while_the_pipeline_wide_alarm_stays_ok(harness):
    # Given three accounts delivering steadily and one that delivered once
    # When one steady account stops and the other two keep sending
    result = s15_quiet_accounts.run(harness, s15_quiet_accounts.QUICK)
    # Then the quiet-accounts alarm pages the local on-call inbox and names that account alone,
    # while the pipeline-wide quiet alarm, fed by the others, does not fire
    assert result.passed, _explain(result)
    assert len(result.data["named"]) == 1, _explain(result)
    assert result.data["pages"] >= 1, _explain(result)
    assert result.data["pipeline_alarm_fired"] is False, _explain(result)
