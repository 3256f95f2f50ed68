"""Auto-reply's debounce has one knob: the ai lane's `debounce_seconds` task option, which the ai
lane's own stamps read, is what the messages lane is given to schedule the turns it stamps."""

from __future__ import annotations

import dataclasses
import json

import pytest

from pipeline.settings.auto_reply import AutoReplySettings
from stacks.config.environments import ENVIRONMENTS


def test_the_messages_lane_schedules_turns_with_the_ai_lanes_debounce(synth_env):
    local = synth_env("local")
    option = dict(local.env.lane("ai").policy.task_options)["debounce_seconds"]
    [settings] = [
        json.loads(variables["AUTO_REPLY"])
        for function in local.resources("AWS::Lambda::Function").values()
        if "AUTO_REPLY" in (variables := function["Properties"].get("Environment", {}).get("Variables", {}))
    ]
    assert settings["debounce_seconds"] == float(option) == 1.0


def test_the_settings_field_is_refused_as_a_second_knob():
    with pytest.raises(ValueError, match="set that option instead"):
        dataclasses.replace(ENVIRONMENTS["local"], auto_reply=AutoReplySettings(debounce_seconds=2))
