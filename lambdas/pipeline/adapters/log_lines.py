"""Powertools' JSON log line, written without two costs it pays on every line and we never use.

The door writes one line per delivery, and Powertools' formatter was about a third of the door's
CPU per delivery. Two of its steps produce nothing in our lines:
- it formats the record's time for `timestamp`, which observability.logger_for removes (CloudWatch
  Logs stamps every event it ingests);
- it tries to decode every plain message as JSON, and a message such as "delivery enqueued" fails
  by raising, which is the slowest way to learn that it is text.

This formatter skips each step only where its result could not reach the line, and leaves every
other case to Powertools: the lines are byte for byte what Powertools writes
(tests/unit/adapters/test_log_lines.py compares the two on every kind of record).
"""

from __future__ import annotations

import logging
from typing import Any

from aws_lambda_powertools.logging.formatter import LambdaPowertoolsFormatter

_JSON_STARTS = frozenset('{["-0123456789tfnNI')
"""What a JSON text can start with once leading whitespace is skipped (json.loads also takes
NaN and Infinity); a message starting with anything else is text."""

_TIME_FIELD = "%(asctime)s"


class LogLineFormatter(LambdaPowertoolsFormatter):
    def formatTime(self, record: logging.LogRecord, datefmt: str | None = None) -> str:
        if not any(isinstance(value, str) and _TIME_FIELD in value for value in self.log_format.values()):
            return ""  # no field of the line shows the time: nothing to format it for
        return super().formatTime(record, datefmt)

    def _extract_log_message(self, log_record: logging.LogRecord) -> Any:
        message = log_record.msg
        if isinstance(message, str) and not log_record.args:
            first = message.lstrip()[:1]
            if first and first not in _JSON_STARTS:
                return message
        return super()._extract_log_message(log_record)
