"""What every lane's consumer does the same way, under that lane's own role: a job runs and its row
is finished, a transient failure backs off, a busy dependency defers, a permanent failure goes to
the lane's dead-letter queue. The consumer is generic; its role is the lane's, so each lane is
tried."""

from __future__ import annotations

import pytest

from pipeline import schema
from pipeline.domain.errors import DependencyBusy, PermanentError, TransientError
from stacks.config.environments import ENVIRONMENTS
from tests.unit.consumer.fakes import Recorder, counter_value

LANES = [lane.name for lane in ENVIRONMENTS["local"].lanes]


@pytest.mark.parametrize("name", LANES)
def test_every_lane_runs_retries_defers_and_dead_letters_jobs_with_its_own_role(lane, name):
    # Given four jobs on the lane: one that runs, one whose dependency fails for a while, one whose
    # dependency is at its budget, and one no retry can fix
    h = lane(name)
    for job_id in ("job-ok", "job-flaky", "job-busy", "job-bad"):
        h.send(h.job_row(job_id, {}, tenant="acme", kind="test", queued=4))

    def behaviour(ctx):
        if ctx.envelope.id == "job-flaky":
            raise TransientError("the dependency timed out")
        if ctx.envelope.id == "job-busy":
            raise DependencyBusy("the dependency is at its budget")
        if ctx.envelope.id == "job-bad":
            raise PermanentError("unreadable", "no retry can fix this")

    # When the lane's consumer takes the batch
    response, messages = h.poll(h.handler(tasks={name: Recorder(behaviour)}))

    # Then the job that ran is done, and only the flaky one is reported for a retry
    assert len(messages) == 4
    assert counter_value(h, "job-ok") == 1
    assert h.row("jobs", "job-ok")["status"] == schema.RowStatus.DONE
    flaky = next(m["MessageId"] for m in messages if '"job-flaky"' in m["Body"])
    assert response == {"batchItemFailures": [{"itemIdentifier": flaky}]}
    # And the busy one waits on the lane again, the bad one is in the lane's DLQ and failed
    assert h.row("jobs", "job-bad")["status"] == schema.RowStatus.FAILED
    assert [m["Body"].count('"job-bad"') for m in h.dead_letters()] == [1]
    assert h.depth() == 2  # the flaky one (invisible for its backoff) and the deferred copy
