"""The settings the template gives each function parse into what the handlers expect."""

from __future__ import annotations

import pytest

from pipeline import settings
from pipeline.domain.envelope import Envelope, MalformedEnvelope


def test_consumer_environment_round_trips_the_catalogue(consumer_environ, env_local):
    # Given every lane of the local environment
    for lane in env_local.lanes:
        # When its consumer's environment is parsed
        parsed = settings.lane(consumer_environ(lane.name))
        # Then it is the catalogue's policy, field for field
        assert parsed == lane.policy
        assert parsed.task_time_limit_seconds < lane.policy.timeout_seconds


def test_every_function_environment_names_real_tables(ingress_environ, jobs_environ, sweeper_environ):
    for environ in (ingress_environ, jobs_environ, sweeper_environ):
        tables = settings.Tables.from_environ(environ)
        assert tables.webhook_log == "webhook-log"
        assert tables.state == "state"


def test_missing_setting_is_named():
    with pytest.raises(settings.SettingsError, match="STATE_TABLE"):
        settings.Tables.from_environ({"WEBHOOK_TABLE": "w", "JOBS_TABLE": "j", "DATA_TABLE": "d"})


def test_envelope_round_trip_and_rejections():
    envelope = Envelope(
        id="job-1",
        lane="bulk",
        tenant="t1",
        kind="import.page",
        source="job",
        created_at=1.5,
        payload={"page": 1, "text": "héllo 👋"},
    )
    assert Envelope.from_json(envelope.to_json()) == envelope
    for body in ("not json", "[]", '{"id": "x"}', envelope.to_json().replace('"job"', '"elsewhere"')):
        with pytest.raises(MalformedEnvelope):
            Envelope.from_json(body)
