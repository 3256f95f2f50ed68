"""A task with more to do than its time (errors.MoreToDo) is re-sent carrying the place it got to,
at no cost in attempts, and takes up from there; its job stays queued until it is done."""

from __future__ import annotations

from dataclasses import replace

from pipeline import schema
from pipeline.domain.consumer import outcomes as out
from pipeline.domain.consumer.work import TaskResult
from pipeline.domain.errors import DependencyBusy, MoreToDo
from pipeline.metric_names import Outcome
from tests.unit.consumer.pipeline_harness import Pipeline


def pages(ctx):
    """Reads pages 1..3, one a run, as a scan with little time would."""
    page = int((ctx.envelope.progress or {}).get("page", 1))
    if page < 3:
        raise MoreToDo({"page": page + 1})
    return TaskResult(detail={"finished_at_page": page})


def busy(ctx):
    raise DependencyBusy("vendor at its limit")


def test_a_task_with_more_to_do_is_resent_with_its_progress_and_no_attempt_spent():
    # Given a job whose task has more than one run's work, that failed once before
    p = Pipeline(task=pages)
    record = p.record(p.job("job-scan", attempt=1))

    # When it runs out of time after its first page
    assert p.run([record]) == []

    # Then the copy re-sent carries where it got to, and its one failed attempt, not one more;
    # nor is it counted as a deferral: it is progress
    ((envelope, delay),) = p.queue.resent
    assert (envelope.id, envelope.progress, envelope.deferrals) == ("job-scan", {"page": 2}, 0)
    assert envelope.attempt == 1
    outcome = p.outcome(record["messageId"])
    assert (outcome.outcome, outcome.detail) == (Outcome.DEFERRED, {"budget": out.CONTINUES})
    assert outcome.defer_seconds == delay
    # and the job is not done yet: whoever asks sees it queued
    assert p.status("job-scan") == schema.RowStatus.QUEUED


def test_the_resent_copy_takes_up_where_it_stopped_and_finishes_the_job():
    p = Pipeline(task=pages)
    p.run([p.record(p.job("job-scan"))])
    for _ in range(2):
        ((envelope, _),) = p.queue.resent
        p.queue.resent.clear()
        p.run([p.record(envelope)])

    assert p.queue.resent == []
    assert p.outcomes() == [Outcome.DEFERRED, Outcome.DEFERRED, Outcome.DONE]
    assert p.status("job-scan") == schema.RowStatus.DONE


def test_a_copy_resent_for_another_reason_keeps_the_progress_it_carried():
    # Given a copy already carrying progress, deferred this time by something else (a busy budget)
    p = Pipeline(task=busy)
    carrying = replace(p.job("job-scan"), progress={"page": 2})

    p.run([p.record(carrying)])

    ((envelope, _),) = p.queue.resent
    assert envelope.progress == {"page": 2}


def test_a_long_scan_keeps_its_protection_from_aws_trouble_however_many_pages_it_takes():
    # Given a task that reads one page a run, and meets AWS throttling once it has gone further than
    # the bound on waiting out AWS trouble counts
    from pipeline.domain.consumer.settling import AWS_OUTAGE_DEFERRALS, AWS_UNAVAILABLE
    from tests.unit.consumer.test_pipeline_failures import AwsError

    pages_before_trouble = AWS_OUTAGE_DEFERRALS + 5

    def long_scan(ctx):
        page = int((ctx.envelope.progress or {}).get("page", 1))
        if page <= pages_before_trouble:
            raise MoreToDo({"page": page + 1})
        raise AwsError("ProvisionedThroughputExceededException", 400)

    p = Pipeline(task=long_scan)
    p.run([p.record(p.job("job-erase"))])
    # When each copy it re-sends is run in turn
    for _ in range(pages_before_trouble):
        ((envelope, _),) = p.queue.resent
        p.queue.resent.clear()
        p.run([p.record(envelope)])
    # Then the throttled run is deferred to wait AWS out, costing no attempt, rather than retried
    _, last = p.observer.outcomes[-1]
    assert (last.outcome, last.detail) == (Outcome.DEFERRED, {"budget": AWS_UNAVAILABLE})
    ((resent, _),) = p.queue.resent
    assert (resent.progress, resent.attempt, resent.deferrals) == ({"page": pages_before_trouble + 1}, 0, 1)
