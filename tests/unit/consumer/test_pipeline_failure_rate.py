"""A lane that pauses itself when its dependency fails at a sustained rate: this instance's window of
model calls (domain/dependencies/failure_rate.py) trips at the lane's share once it holds enough calls; from
then the failing records are held in the lane without spending an attempt, and the lane pauses
with the reason `model_failing`. A record's own fault, and a healthy share, pause nothing."""

from __future__ import annotations

from pipeline.domain.consumer.settling import LANE_PAUSED
from pipeline.domain.consumer.work import TaskResult
from pipeline.domain.dependencies.failure_rate import FailureWindow
from pipeline.domain.dependencies.model import Completion, ModelRejectedInput, ModelUnavailable
from pipeline.metric_names import Outcome
from pipeline.settings.lane_policy import FailureRatePause
from tests.unit.consumer.pipeline_harness import Pipeline


def calls_model(ctx):
    ctx.vendor.complete("When do you open?", timeout=5.0)
    return TaskResult()


class Model:
    """Answers, or raises, in the order given."""

    def __init__(self, *answers: BaseException | None) -> None:
        self._answers = list(answers)

    def complete(self, prompt: str, *, timeout: float) -> Completion:
        answer = self._answers.pop(0)
        if answer is not None:
            raise answer
        return Completion(text="We open at nine.", input_tokens=5, output_tokens=4)


def pipeline(model: Model, share: float = 0.5) -> Pipeline:
    p = Pipeline(task=calls_model, vendor=model)
    p.failures = FailureWindow(FailureRatePause(window_seconds=60, min_calls=3, failure_share=share), p.clock)
    p.__post_init__()
    return p


def test_a_model_failing_every_call_pauses_the_lane_once_the_window_holds_enough_calls():
    # Given a lane whose model is unavailable for every call, watching 3 calls at a share of one half
    p = pipeline(Model(*(ModelUnavailable("ServiceUnavailableException") for _ in range(4))))
    records = [p.record(p.job(f"job-{n}")) for n in range(4)]

    # When a batch of four runs
    failed = p.run(records)

    # Then the first two are retried as any transient failure (the window held too few calls)
    assert failed == [records[0]["messageId"], records[1]["messageId"]]
    # And from the third the records are held in the lane without an attempt, and nothing is dead-lettered
    held = [p.outcome(r["messageId"]) for r in records[2:]]
    assert [(o.outcome, o.detail["budget"], o.error.reason) for o in held] == [
        (Outcome.DEFERRED, LANE_PAUSED, "model_failing")
    ] * 2
    assert p.queue.dead == []
    # And the lane paused itself once, for the model failing
    assert (p.switch.pauses, p.switch.reasons, p.observer.paused) == (1, ["model_failing"], ["model_failing"])
    # And the window starts again clean: the lane resumed is not paused by what came before
    assert p.failures.tripped() == ()


def test_a_share_of_failures_under_the_threshold_pauses_nothing():
    # Given a model failing one call in four, on a lane pausing at three in four
    p = pipeline(Model(None, ModelUnavailable("ServiceUnavailableException"), None, None), share=0.75)
    records = [p.record(p.job(f"job-{n}")) for n in range(4)]

    # When they run
    failed = p.run(records)

    # Then the one failure is retried, and the lane keeps running
    assert failed == [records[1]["messageId"]]
    assert (p.switch.pauses, p.observer.paused) == (0, [])


def test_records_the_model_rejects_are_their_own_fault_and_pause_nothing():
    # Given a model refusing every prompt as invalid (the records', not the model's, fault)
    p = pipeline(Model(*(ModelRejectedInput("ValidationException: too long") for _ in range(4))))
    records = [p.record(p.job(f"job-{n}")) for n in range(4)]

    # When they run
    p.run(records)

    # Then they are dead-lettered with their reason, and the lane keeps running
    assert len(p.queue.dead) == 4
    assert (p.switch.pauses, p.observer.paused) == (0, [])


def test_calls_older_than_the_window_are_forgotten():
    # Given two failed calls, then a minute and more of quiet
    p = pipeline(Model(*(ModelUnavailable("ServiceUnavailableException") for _ in range(3))))
    p.run([p.record(p.job("job-0")), p.record(p.job("job-1"))])
    p.clock.now += 61

    # When a third call fails
    p.run([p.record(p.job("job-2"))])

    # Then the window holds one call, too few to pause
    assert (p.switch.pauses, p.observer.paused) == (0, [])
