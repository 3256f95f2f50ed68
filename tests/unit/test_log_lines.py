"""The log line formatter (adapters/log_lines.py) skips work, never output: for every kind of
record it writes exactly the line Powertools' own formatter writes."""

from __future__ import annotations

import io
import logging
import sys

import pytest
from aws_lambda_powertools.logging.formatter import LambdaPowertoolsFormatter

from pipeline.adapters.log_lines import LogLineFormatter
from pipeline.adapters.observability import logger_for

MESSAGES = [
    "delivery enqueued",
    "",
    "   ",
    '{"already": "json"}',
    '  ["a", 1]',
    "123",
    "-4.5e3",
    "true",
    "false",
    "null",
    "NaN",
    "Infinity",
    "nonsense that starts like null",
    "\ufeff{}",
    "\x0bnull",
    "tenant 12 refused",
    {"a": "dict message"},
    ["a", "list"],
    42,
]


def _record(message, *, args=(), exc_info=None, **extra) -> logging.LogRecord:
    record = logging.LogRecord("door", logging.INFO, __file__, 10, message, args, exc_info)
    record.created = 1_800_000_000.25
    record.msecs = 250.0
    record.__dict__.update(extra)
    return record


def _pair(removed: list[str]) -> tuple[logging.Formatter, logging.Formatter]:
    ours, theirs = LogLineFormatter(service="door"), LambdaPowertoolsFormatter(service="door")
    for formatter in (ours, theirs):
        formatter.remove_keys(removed)
    return ours, theirs


@pytest.mark.parametrize("removed", [["location", "timestamp"], ["location"], []])
@pytest.mark.parametrize("message", MESSAGES)
def test_every_message_is_written_as_powertools_writes_it(removed, message):
    ours, theirs = _pair(removed)
    record = _record(message, correlation_id="wh-1", lane="messages", count=3, missing=None)

    assert ours.format(record) == theirs.format(record)


@pytest.mark.parametrize("removed", [["location", "timestamp"], []])
def test_formatted_arguments_and_exceptions_are_written_as_powertools_writes_them(removed):
    ours, theirs = _pair(removed)
    try:
        raise LookupError("table down")
    except LookupError:
        failure = sys.exc_info()
    records = [
        _record("tenant %s refused", args=("t1",)),
        _record("delivery failed", exc_info=failure, reason="table_unavailable"),
    ]

    for record in records:
        assert ours.format(record) == theirs.format(record)


def test_a_time_field_added_later_is_still_written():
    ours, theirs = _pair(["location", "timestamp"])
    for formatter in (ours, theirs):
        formatter.append_keys(logged_at="%(asctime)s")
    record = _record("delivery enqueued")

    line = ours.format(record)

    assert line == theirs.format(record)
    assert '"logged_at":"' in line
    assert '"logged_at":""' not in line


def test_the_functions_logger_writes_its_lines_with_it():
    logger = logger_for({}, "log-lines-door")
    stream = io.StringIO()
    logger.registered_handler.setStream(stream)

    logger.info("delivery enqueued", extra={"correlation_id": "wh-1"})

    assert isinstance(logger.registered_formatter, LogLineFormatter)
    assert (
        stream.getvalue()
        == '{"level":"INFO","message":"delivery enqueued","service":"log-lines-door","correlation_id":"wh-1"}\n'
    )
