"""`lanectl trace` counts the attempts that failed: a finished row records the attempt that
finished it (marks.finish), every other row the attempts that failed so far."""

from __future__ import annotations

import pytest

from ops.commands import trace
from pipeline.domain.consumer import marks


@pytest.mark.parametrize(
    ("status", "recorded", "shown"),
    [
        ("done", 1, None),  # finished at its first attempt: none failed
        ("done", 3, "2 failed attempt(s)"),
        ("pending", 2, "2 failed attempt(s)"),  # between attempts (marks.retry_note)
        ("failed", 5, "5 failed attempt(s)"),  # dead-lettered after its last
    ],
)
def test_a_rows_failed_attempts_are_the_ones_that_did_not_finish_it(status, recorded, shown):
    # Given a job row as the consumer leaves it
    row = {"status": status, marks.ATTEMPTS: recorded, "lane": "ai", "tenant": "shop-1", "kind": "ai.inbound"}

    # When its path is told
    steps = dict(trace._path(trace.Trace(source="job", id="job-1", row=row)))

    # Then the attempts line counts only those that failed
    assert steps.get("attempts") == shown
