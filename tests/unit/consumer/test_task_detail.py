"""A task's detail is its own: any key it chooses (an `attempt` or `outcome` of its own, as the
reply send reports the send's attempt) is kept under the outcome's detail and never collides with
the outcome's own fields, so a finished task is settled done, not dead-lettered as a TypeError."""

from __future__ import annotations

import pytest

from pipeline.domain.consumer.work import TaskResult
from pipeline.domain.effects import OnConflict, Put, Table
from pipeline.metric_names import Outcome
from tests.unit.consumer.pipeline_harness import Pipeline


def reporting(**detail):
    def task(ctx):
        return TaskResult(detail=dict(detail))

    return task


def writing(**detail):
    def task(ctx):
        put = Put(table=Table.DATA, item={"pk": "p", "sk": "s"}, on_conflict=OnConflict.SKIP, standalone=True)
        return TaskResult(writes=(put,), detail=dict(detail))

    return task


@pytest.mark.parametrize("make", [reporting, writing])
@pytest.mark.parametrize("key", ["attempt", "outcome"])
def test_a_detail_key_named_like_an_outcome_field_is_kept_and_the_record_is_done(make, key):
    p = Pipeline(task=make(**{key: 3, "reply": "sent"}))
    record = p.record(p.job("job-1"))

    assert p.run([record]) == []

    outcome = p.outcome(record["messageId"])
    assert outcome.outcome == Outcome.DONE
    assert outcome.detail[key] == 3
    assert p.queue.dead == []
