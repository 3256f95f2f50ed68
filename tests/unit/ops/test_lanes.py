"""`lane pause` and `lane resume [--ramp]`: the event source mapping, and a paced return."""

from __future__ import annotations

import pytest

from ops.commands.lanes import parse_duration, ramp_levels


def _mapping(stack, lane):
    return stack.clients["lambda"].get_event_source_mapping(UUID=stack.lane(lane).mapping_id)


def _enable(stack, lane, concurrency):
    stack.clients["lambda"].update_event_source_mapping(
        UUID=stack.lane(lane).mapping_id, Enabled=True, ScalingConfig={"MaximumConcurrency": concurrency}
    )


def test_pause_disables_the_mapping(prod_stack, lanectl):
    _enable(prod_stack, "messages", 20)

    result = lanectl("lane", "pause", "messages", "--env", "prod")

    assert result.code == 0, result.err
    assert _mapping(prod_stack, "messages")["State"] == "Disabled"
    assert f"paused messages: mapping {prod_stack.lane('messages').mapping_id} is Disabled" in result.out
    assert "the queue keeps accepting work and nothing is lost" in result.out
    assert "lanectl lane resume messages --env prod --ramp 5m" in result.out


def test_pause_of_a_paused_lane_says_so(prod_stack, lanectl):
    result = lanectl("lane", "pause", "ai", "--env", "prod")

    assert result.code == 0
    assert result.out.startswith("ai is already paused")


def test_resume_goes_straight_to_the_catalogue_concurrency(prod_stack, lanectl):
    # Given a paused lane whose concurrency was left low by an interrupted ramp
    prod_stack.clients["lambda"].update_event_source_mapping(
        UUID=prod_stack.lane("messages").mapping_id, ScalingConfig={"MaximumConcurrency": 4}
    )

    result = lanectl("lane", "resume", "messages", "--env", "prod")

    assert result.code == 0, result.err
    mapping = _mapping(prod_stack, "messages")
    assert (mapping["State"], mapping["ScalingConfig"]["MaximumConcurrency"]) == ("Enabled", 20)
    assert "at MaximumConcurrency 20" in result.out


def test_ramped_resume_raises_concurrency_step_by_step(prod_stack, lanectl, clock):
    # Given a paused messages lane (catalogue MaximumConcurrency 20), and a record of each step
    seen = []
    clock.on_sleep = lambda _n: seen.append(_mapping(prod_stack, "messages")["ScalingConfig"]["MaximumConcurrency"])

    # When it is resumed with a 90-second ramp
    result = lanectl("lane", "resume", "messages", "--ramp", "90s", "--env", "prod")

    # Then it starts at 2 and climbs evenly to 20, one step every 10 s
    assert result.code == 0, result.err
    assert seen == [2, 4, 6, 8, 10, 12, 14, 16, 18]
    assert clock.sleeps == [10.0] * 9
    assert _mapping(prod_stack, "messages")["ScalingConfig"]["MaximumConcurrency"] == 20
    assert _mapping(prod_stack, "messages")["State"] == "Enabled"
    assert "MaximumConcurrency 2 → 4 → 6 → 8 → 10 → 12 → 14 → 16 → 18 → 20, one step every 10s" in result.out
    assert "  +1m30s  MaximumConcurrency 20 of 20" in result.out


def test_ramp_on_a_running_lane_never_lowers_it(prod_stack, lanectl, clock):
    _enable(prod_stack, "ai", 30)
    seen = []
    clock.on_sleep = lambda _n: seen.append(_mapping(prod_stack, "ai")["ScalingConfig"]["MaximumConcurrency"])

    result = lanectl("lane", "resume", "ai", "--ramp", "20s", "--env", "prod")

    assert result.code == 0, result.err
    assert seen == [30, 35]
    assert _mapping(prod_stack, "ai")["ScalingConfig"]["MaximumConcurrency"] == 40


def test_ctrl_c_holds_the_ramp_where_it_is(prod_stack, lanectl, clock):
    def interrupt(count):
        if count == 3:
            raise KeyboardInterrupt

    clock.on_sleep = interrupt

    result = lanectl("lane", "resume", "messages", "--ramp", "5m", "--env", "prod")

    assert result.code == 130
    assert _mapping(prod_stack, "messages")["ScalingConfig"]["MaximumConcurrency"] == 4
    assert "interrupted: messages held at MaximumConcurrency 4; go straight to 20 with: " in result.out
    assert "lanectl lane resume messages --env prod" in result.out


def test_unknown_lane_exits_2(prod_stack, lanectl):
    result = lanectl("lane", "pause", "sms", "--env", "prod")

    assert result.code == 2
    assert "unknown lane 'sms' in prod" in result.err


def test_bad_ramp_exits_2(lanectl):
    result = lanectl("lane", "resume", "messages", "--ramp", "soon", "--env", "prod")

    assert result.code == 2
    assert "not a duration: 'soon'" in result.err


@pytest.mark.parametrize(
    ("text", "seconds"), [("90s", 90), ("5m", 300), ("1h30m", 5400), ("1m30s", 90), ("45", 45), (" 2M ", 120)]
)
def test_durations(text, seconds):
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["", "0", "0s", "5x", "m", "-5m", "1.5m"])
def test_bad_durations(text):
    with pytest.raises(ValueError, match=r"duration|longer than 0"):
        parse_duration(text)


def test_ramp_levels():
    assert ramp_levels(2, 20, 300) == list(range(2, 21))  # 18 steps fit in 5 minutes at 10 s each
    assert ramp_levels(2, 20, 30) == [2, 8, 14, 20]  # only 3 steps of 10 s fit
    assert ramp_levels(2, 5, 5) == [2, 5]  # at least one step
    assert ramp_levels(2, 2, 60) == [2]
    assert ramp_levels(30, 20, 60) == [20]


def test_a_long_ramp_is_summarised_and_ends_at_the_catalogue_value(prod_stack, lanectl, clock):
    result = lanectl("lane", "resume", "ai", "--ramp", "10m", "--env", "prod")

    assert result.code == 0, result.err
    assert "MaximumConcurrency 2 → 3 → 4 … 39 → 40, one step every 16s" in result.out
    assert sum(clock.sleeps) == pytest.approx(600)
    assert _mapping(prod_stack, "ai")["ScalingConfig"]["MaximumConcurrency"] == 40


def _mark(stack, lane):
    item = stack.clients["dynamodb"].get_item(TableName="state", Key={"pk": {"S": f"lane-pause#{lane}"}}).get("Item")
    return None if item is None else {key: next(iter(value.values())) for key, value in item.items()}


def test_pause_marks_the_lane_as_the_operators_so_the_probe_leaves_it(prod_stack, lanectl):
    # Given the ai lane, which its consumer paused itself (its mark says so)
    prod_stack.clients["dynamodb"].put_item(
        TableName="state",
        Item={"pk": {"S": "lane-pause#ai"}, "by": {"S": "lane"}, "reason": {"S": "meta_token_invalid"}},
    )

    # When an operator pauses it
    result = lanectl("lane", "pause", "ai", "--env", "prod")

    # Then the mark is the operator's, and the command says the probe will not resume it
    assert result.code == 0, result.err
    assert (_mark(prod_stack, "ai")["by"], _mark(prod_stack, "ai")["reason"]) == ("operator", "operator")
    assert "the lane probe will not resume it" in result.out


def test_resume_deletes_the_lanes_pause_mark(prod_stack, lanectl):
    # Given a lane an operator paused
    assert lanectl("lane", "pause", "messages", "--env", "prod").code == 0
    assert _mark(prod_stack, "messages")["by"] == "operator"

    # When it is resumed
    result = lanectl("lane", "resume", "messages", "--env", "prod")

    # Then no mark is left
    assert result.code == 0, result.err
    assert _mark(prod_stack, "messages") is None


def test_an_unknown_lane_is_refused_before_any_mark_is_written(prod_stack, lanectl):
    result = lanectl("lane", "pause", "nope", "--env", "prod")

    assert result.code == 2
    assert prod_stack.clients["dynamodb"].scan(TableName="state")["Items"] == []
