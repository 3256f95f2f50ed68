"""What the three HTTP handlers share (handlers/http_door.py): a door's reply becomes API Gateway's
answer, every failure becomes one 500 counted by its reason, and an instance is built once."""

from __future__ import annotations

import json
import logging
import os

import pytest

from pipeline.adapters.observability import logger_for, metrics_for
from pipeline.domain import http
from pipeline.handlers.http_door import Failures, entry_point, http_handler
from tests.support.aws import http_api_event

FAILED = "DoorFailed"
FAILURES = Failures(FAILED, "internal", "door request failed", {LookupError: ("table_unavailable", "table down")})


class TableDown(LookupError):
    pass


def _handler(rules):
    return http_handler(rules, logger_for({}, "door"), metrics_for({}, "door"), FAILURES)


def _raise(exc: Exception):
    def rules(request, telemetry):
        raise exc

    return rules


def test_a_reply_is_answered_in_api_gateways_shape():
    handler = _handler(lambda request, telemetry: http.json_response(202, {"id": "job-1"}, headers={"location": "/x"}))

    answer = handler(http_api_event("POST", "/jobs"), None)

    assert answer == {
        "statusCode": 202,
        "headers": {"content-type": http.JSON, "x-content-type-options": "nosniff", "location": "/x"},
        "body": '{"id":"job-1"}',
        "isBase64Encoded": False,
    }


@pytest.mark.parametrize(
    ("raised", "reason"),
    [
        (http.Failed("secrets_unavailable"), "secrets_unavailable"),
        (TableDown("jobs"), "table_unavailable"),
        (ZeroDivisionError(), "internal"),
    ],
    ids=["logged-by-the-rules", "a-listed-dependency", "a-bug"],
)
def test_every_failure_is_one_500_counted_by_its_reason(raised, reason, metrics):
    answer = _handler(_raise(raised))(http_api_event("GET", "/"), None)

    assert answer["statusCode"] == 500
    assert json.loads(answer["body"]) == {"message": "internal error"}
    assert [m for m in metrics() if m[0] == FAILED] == [(FAILED, {"Reason": reason})]


def test_a_failure_the_rules_did_not_log_is_logged_here_with_its_traceback(caplog):
    caplog.set_level(logging.ERROR)

    _handler(_raise(TableDown("jobs")))(http_api_event("GET", "/"), None)
    _handler(_raise(http.Failed("secrets_unavailable")))(http_api_event("GET", "/"), None)

    assert [(r.getMessage(), r.exc_info is not None) for r in caplog.records] == [("table down", True)]


def test_the_entry_point_builds_the_instance_once_from_the_environment():
    built = []

    def create(environ):
        built.append(environ)
        return lambda event, context: {"statusCode": 200}

    handler = entry_point(create)
    handler({}, None)
    handler({}, None)

    assert built == [os.environ]
