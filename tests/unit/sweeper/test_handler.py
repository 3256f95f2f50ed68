"""The Lambda entry point: built lazily from the environment, and bounded by the invocation's time."""

from __future__ import annotations

import time

from pipeline import metric_names
from pipeline.handlers import sweeper

from .conftest import metric

GRACE = 8


class NearlyOutOfTime:
    def get_remaining_time_in_millis(self) -> int:
        return 1_000


def test_module_handler_builds_from_the_process_environment(sweeper_environ, rows, queues, clock, monkeypatch):
    # Given the function's environment as Lambda sets it, and a row lost an hour ago by the real clock
    for name, value in sweeper_environ.items():
        monkeypatch.setenv(name, value)
    clock.now = time.time()
    rows.webhook("wh-env", age=3600)
    sweeper._built.cache_clear()

    try:
        # When the schedule invokes the module-level handler
        report = sweeper.handler({"detail-type": "Scheduled Event"}, None)
    finally:
        sweeper._built.cache_clear()

    # Then it swept with those settings
    assert report["webhook"]["replayed"] == 1
    assert queues.depth("messages") == 1


def test_a_sweep_near_its_timeout_stops_but_still_reports_ages(sweeper_environ, rows, queues, clock, capsys):
    # Given a lost row and an invocation with almost no time left
    rows.webhook("wh-late-run", age=GRACE + 30)

    # When the sweep runs
    report = sweeper.create_handler(sweeper_environ, clock=clock)({}, NearlyOutOfTime())

    # Then it leaves the row for the next run, and the watchdog metric is still published
    assert report["stopped_early"] is True
    assert report["webhook"]["replayed"] == 0
    assert queues.depth("messages") == 0
    assert metric(capsys.readouterr().out, metric_names.OLDEST_UNPROCESSED_AGE, "webhook") == [GRACE + 30.0]


def test_missing_settings_are_named(sweeper_environ):
    import pytest

    from pipeline.settings import SettingsError

    environ = {k: v for k, v in sweeper_environ.items() if k != "SWEEPER_SETTINGS"}
    with pytest.raises(SettingsError, match="SWEEPER_SETTINGS"):
        sweeper.create_handler(environ)
    with pytest.raises(SettingsError, match="grace_seconds <= patience_seconds"):
        sweeper.create_handler(
            {
                **sweeper_environ,
                "SWEEPER_SETTINGS": '{"grace_seconds": 60, "patience_seconds": 10, '
                '"max_replays": 3, "page_rows": 10, "patience_cap_seconds": 600, "run_seconds": 50}',
            }
        )
    with pytest.raises(SettingsError, match="patience_cap_seconds"):
        sweeper.create_handler(
            {
                **sweeper_environ,
                "SWEEPER_SETTINGS": '{"grace_seconds": 8, "patience_seconds": 30, '
                '"max_replays": 3, "page_rows": 10, "run_seconds": 50}',
            }
        )
