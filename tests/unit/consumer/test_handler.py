"""The handler module: nothing at import, built once from the environment, loud about bad config."""

from __future__ import annotations

import importlib
import json

import pytest

from pipeline import settings
from pipeline.tasks import TASKS, UnknownTask
from stacks.config.environments import ENVIRONMENTS


def test_every_catalogue_task_has_a_function():
    for env in ENVIRONMENTS.values():
        for lane in env.lanes:
            assert lane.policy.task in TASKS, f"{env.name}/{lane.name} names task {lane.policy.task!r}"


def test_the_module_handler_builds_itself_once_from_the_environment(consumer_environ, monkeypatch):
    # Given the module freshly imported: importing it read nothing and made no client
    module = importlib.import_module("pipeline.handlers.consumer")
    module._default.cache_clear()
    for name, value in consumer_environ("scheduled").items():
        monkeypatch.setenv(name, value)
    # When Lambda calls it twice
    assert module.handler({"Records": []}, None) == {"batchItemFailures": []}
    first = module._default()
    module.handler({"Records": []}, None)
    # Then it was built once
    assert module._default() is first
    module._default.cache_clear()


def test_a_lane_naming_an_unknown_task_fails_the_cold_start(consumer_environ):
    from pipeline.handlers.consumer import create_handler

    environ = consumer_environ("bulk")
    lane = json.loads(environ["LANE"])
    lane["task"] = "bulkk"
    with pytest.raises(UnknownTask, match="bulkk"):
        create_handler({**environ, "LANE": json.dumps(lane)})


def test_a_lane_naming_an_undefined_dependency_fails_the_cold_start(consumer_environ):
    from pipeline.handlers.consumer import create_handler

    environ = {**consumer_environ("ai"), "DEPENDENCIES": json.dumps({})}
    with pytest.raises(settings.SettingsError, match="llm"):
        create_handler(environ)
