"""A lane that pauses itself: a record whose dependency refuses the lane (a model it may not call,
Meta's token revoked) is kept in the lane without spending an attempt, the lane's mapping is
disabled once per batch, and the pause is counted by its reason."""

from __future__ import annotations

from pipeline import schema
from pipeline.domain.consumer.settling import LANE_PAUSED
from pipeline.domain.dependencies.lane_pause import PauseNotMarked
from pipeline.domain.dependencies.meta_send import TokenInvalid
from pipeline.domain.dependencies.model import ModelRefused
from pipeline.domain.effects import Table
from pipeline.domain.errors import TransientError
from pipeline.metric_names import Outcome
from tests.unit.consumer.pipeline_harness import Pipeline, lane_settings


def raising(exc: BaseException):
    def task(ctx):
        raise exc

    return task


def test_a_revoked_token_on_its_last_receive_is_kept_in_the_lane_not_dead_lettered():
    # Given a job on its last receive whose reply Meta refuses with an invalid token
    p = Pipeline(task=raising(TokenInvalid("Error validating access token")), lane=lane_settings(max_receives=3))
    record = p.record(p.job("job-1"), receives=3)
    # When it runs
    assert p.run([record]) == []
    # Then nothing is dead-lettered: it is re-sent, acked, with its attempts as they were
    assert p.queue.dead == []
    ((resent, delay),) = p.queue.resent
    assert resent.id == "job-1"
    assert resent.deferrals == 1
    outcome = p.outcome(record["messageId"])
    assert (outcome.outcome, outcome.detail["budget"], outcome.error.reason) == (
        Outcome.DEFERRED,
        LANE_PAUSED,
        "meta_token_invalid",
    )
    assert delay > 0
    assert p.store.row(Table.JOBS, "job-1")["status"] != schema.RowStatus.FAILED
    # And the lane paused itself, saying why
    assert p.switch.pauses == 1
    assert p.observer.paused == ["meta_token_invalid"]


def test_a_batch_the_model_refuses_pauses_the_lane_once_and_keeps_every_record():
    p = Pipeline(task=raising(ModelRefused("AccessDeniedException: not enabled")))
    records = [p.record(p.job(f"job-{n}")) for n in range(4)]
    assert p.run(records) == []
    assert p.queue.dead == []
    assert sorted(e.id for e, _ in p.queue.resent) == [f"job-{n}" for n in range(4)]
    assert p.switch.pauses == 1
    assert p.observer.paused == ["model_refused"]


def test_an_ordinary_transient_failure_pauses_nothing():
    p = Pipeline(task=raising(TransientError("vendor slow")))
    record = p.record(p.job("job-1"))
    assert p.run([record]) == [record["messageId"]]
    assert (p.switch.pauses, p.observer.paused) == (0, [])


def test_a_pause_lambda_refuses_is_reported_and_the_records_are_still_kept():
    p = Pipeline(task=raising(TokenInvalid("revoked")))
    p.switch.error = RuntimeError("AccessDeniedException: lambda:UpdateEventSourceMapping")
    record = p.record(p.job("job-1"))
    assert p.run([record]) == []
    assert p.queue.dead == []
    assert [e.id for e, _ in p.queue.resent] == ["job-1"]
    assert [message for message, _, _ in p.observer.problems] == ["lane not paused"]


def test_a_pause_whose_mark_was_not_written_says_the_probe_will_not_resume_it():
    p = Pipeline(task=raising(TokenInvalid("revoked")))
    p.switch.error = PauseNotMarked("the lane is paused but its mark was not written: ClientError")
    record = p.record(p.job("job-1"))
    assert p.run([record]) == []
    assert p.queue.dead == []
    assert [message for message, _, _ in p.observer.problems] == [
        "lane paused without its mark: the probe will not resume it"
    ]
