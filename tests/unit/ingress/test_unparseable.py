"""Signed bodies that will never parse: kept (the row is the evidence), never queued, answered 200
so that Meta does not retry a body no retry can fix."""

from __future__ import annotations

import pytest

from pipeline import schema
from pipeline.domain.webhook import delivery as webhook
from pipeline.domain.webhook.delivery import Unparseable
from tests.unit.ingress.conftest import post

DEPTH_LIMIT = 64  # the local environment's max_json_depth


def _nested(levels: int) -> bytes:
    return b'{"entry":' * (levels - 1) + b"{}" + b"}" * (levels - 1)


UNPARSEABLE = {
    "truncated": (b'{"object": "page", "entry": [', Unparseable.INVALID_JSON),
    "prose": (b"not json at all", Unparseable.INVALID_JSON),
    "nan": (b'{"a": NaN}', Unparseable.INVALID_JSON),
    "byte-order-mark": (b'\xef\xbb\xbf{"object": "page", "entry": []}', Unparseable.INVALID_JSON),
    "infinite-number": (b'{"a": 1e400}', Unparseable.INVALID_JSON),
    "huge-integer": (b'{"a": ' + b"9" * 5000 + b"}", Unparseable.INVALID_JSON),
    "invalid-utf8-in-string": (b'{"a": "\xff\xfe"}', Unparseable.INVALID_UTF8),
    "invalid-utf8": (b"\xc3\x28", Unparseable.INVALID_UTF8),
    "too-deep": (_nested(DEPTH_LIMIT + 1), Unparseable.TOO_DEEP),
    "too-deep-for-the-parser": (b"[" * 50_000 + b"]" * 50_000, Unparseable.TOO_DEEP),
    "array": (b"[1, 2, 3]", Unparseable.NOT_AN_OBJECT),
    "string": (b'"just a string"', Unparseable.NOT_AN_OBJECT),
}


@pytest.mark.parametrize(("raw", "reason"), UNPARSEABLE.values(), ids=UNPARSEABLE.keys())
def test_each_unparseable_body_is_classified(raw, reason):
    assert webhook.parse(raw, max_depth=DEPTH_LIMIT).problem is reason


def test_unparseable_bodies_are_logged_raw_not_enqueued_and_answered_200(door, inspect, metrics):
    for case, (raw, reason) in UNPARSEABLE.items():
        # When a signed body arrives that cannot be parsed
        response = door(post(raw), None)

        # Then Meta gets 200 (a retry would not help), the raw bytes are kept, marked, and out
        # of the pending index
        assert response["statusCode"] == 200, case
        row_id = webhook.log_id(raw)
        row = inspect.row(row_id)
        assert row["status"]["S"] == schema.RowStatus.UNPARSEABLE, case
        assert row["unparseable_reason"]["S"] == reason.value, case
        assert schema.PENDING_SHARD not in row, case
        assert inspect.body(row_id) == raw, case
        assert ("WebhookUnparseable", {}) in metrics(), case

    # And nothing was queued on any lane
    assert inspect.messages("messages") == []
    assert inspect.messages("engagement") == []


def test_nesting_at_the_limit_is_accepted(door, inspect):
    raw = _nested(DEPTH_LIMIT)

    assert door(post(raw), None)["statusCode"] == 200

    assert inspect.row(webhook.log_id(raw))["status"]["S"] == schema.RowStatus.QUEUED


def test_an_unparseable_redelivery_adds_nothing(door, inspect, metrics):
    door(post(b"{oops"), None)
    metrics()

    assert door(post(b"{oops"), None)["statusCode"] == 200

    assert len(inspect.rows()) == 1
    emitted = metrics()
    assert ("WebhookDuplicate", {}) in emitted
    assert ("WebhookUnparseable", {}) not in emitted
