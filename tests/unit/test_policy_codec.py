"""One codec writes every policy into a function's environment and reads it back, strictly."""

from __future__ import annotations

import json

import pytest

from pipeline import settings
from pipeline.settings import codec
from pipeline.settings.codec import PolicyError
from pipeline.settings.lane_policy import LanePolicy
from stacks.config.environments import ENVIRONMENTS


def _bulk_plain() -> dict:
    return codec.to_plain(ENVIRONMENTS["prod"].lane("bulk").policy)


@pytest.mark.parametrize("name", sorted(ENVIRONMENTS))
def test_every_lane_policy_round_trips(name):
    # Given every lane of an environment, when written and read back, then it is the same policy
    for lane in ENVIRONMENTS[name].lanes:
        assert codec.loads(LanePolicy, codec.dumps(lane.policy)) == lane.policy


def test_nested_values_are_written_as_plain_json():
    plain = _bulk_plain()

    assert plain["retry"] == {"base_seconds": 30, "cap_seconds": 900}
    assert plain["tenant_quota"]["mode"] == "enforce"
    assert plain["dependency"] is None
    assert codec.to_plain(ENVIRONMENTS["prod"].lane("ai").policy)["task_options"][0] == ["debounce_seconds", "4"]


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda p: p.update(colour="red"), r"LanePolicy: unknown field\(s\) colour"),
        (lambda p: p.pop("defer_seconds"), r"LanePolicy: missing field\(s\) defer_seconds"),
        (lambda p: p["retry"].update(cap_seconds="soon"), r"LanePolicy.retry.cap_seconds: expected float, got 'soon'"),
        (lambda p: p.update(max_receives=True), r"LanePolicy.max_receives: expected int, got True"),
        (lambda p: p.update(batch_size=5.5), r"LanePolicy.batch_size: expected int, got 5.5"),
        (lambda p: p["tenant_quota"].update(mode="sometimes"), r"tenant_quota.mode: 'sometimes' is not one of"),
        (lambda p: p.update(task_options=[["debounce_seconds"]]), r"task_options\[0\]: expected 2 items, got 1"),
        (lambda p: p.update(retry=[2, 60]), r"LanePolicy.retry: expected an object, got list"),
        (lambda p: p.update(timeout_seconds=0), r"LanePolicy: lane 'bulk': timeout_seconds must be 1..900"),
    ],
    ids=["unknown", "missing", "wrong-type", "bool-for-int", "float-for-int", "enum", "tuple", "object", "rule"],
)
def test_a_policy_that_does_not_match_its_type_names_the_field(change, message):
    # Given the bulk lane's policy as written, with one mistake
    plain = _bulk_plain()
    change(plain)
    # When it is read, then the error says which field and why
    with pytest.raises(PolicyError, match=message):
        codec.from_plain(LanePolicy, plain)


def test_a_function_names_the_variable_that_holds_a_bad_policy(consumer_environ):
    # Given a consumer deployed with a LANE that has an unknown field
    environ = consumer_environ("bulk")
    plain = json.loads(environ["LANE"])
    plain["max_concurency"] = 3
    # When its settings are read, then the error names the variable and the field
    with pytest.raises(settings.SettingsError, match=r"LANE: LanePolicy: unknown field\(s\) max_concurency"):
        settings.lane({**environ, "LANE": json.dumps(plain)})


def test_an_objective_that_is_not_whole_seconds_is_refused_naming_the_lane(sweeper_environ):
    objectives = json.loads(sweeper_environ["LANE_OBJECTIVES"])
    objectives["bulk"] = "soon"

    with pytest.raises(settings.SettingsError, match="LANE_OBJECTIVES: objectives must be whole seconds > 0: bulk"):
        settings.lane_objectives({**sweeper_environ, "LANE_OBJECTIVES": json.dumps(objectives)})
