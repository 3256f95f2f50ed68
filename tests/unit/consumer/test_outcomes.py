"""Each outcome of a record: done, retried with backoff, dead-lettered, not started, timed out."""

from __future__ import annotations

import json
import random
import threading

import pytest

from pipeline import schema, settings
from pipeline.domain.consumer.work import TaskResult
from pipeline.domain.effects import Put, Table
from pipeline.domain.errors import PermanentError, TransientError
from pipeline.settings.lane_policy import RetryPolicy
from tests.unit.consumer.fakes import Recorder, counter_value
from tests.unit.consumer.handler_output import line_metric_total, log_lines, metric_total, stdout_records
from tests.unit.consumer.handler_seams import Context
from tests.unit.consumer.lane_env import with_lane


def _raise(exc: Exception):
    def behaviour(_ctx):
        raise exc

    return behaviour


def test_success_marks_the_row_done_with_its_effect_in_one_commit(lane, capsys, caplog):
    # Given a pending job whose tenant has 3 jobs queued
    h = lane("messages")
    envelope = h.job_row("job-ok", {"n": 1}, tenant="acme", kind="test", queued=3)
    h.send(envelope)
    task = Recorder()
    # When the consumer takes it
    response, _ = h.poll(h.handler(tasks={"messages": task}))
    # Then it is acked, the effect is written, and the row is done and out of the pending index
    assert response == {"batchItemFailures": []}
    assert counter_value(h, "job-ok") == 1
    row = h.row("jobs", "job-ok")
    assert row["status"] == schema.RowStatus.DONE
    assert schema.PENDING_SHARD not in row
    assert row["attempts"] == 1
    # And the tenant's queued count came down in the same commit
    assert h.state("queued#messages#acme")["queued"] == 2
    assert len(h.calls.of("TransactWriteItems")) == 1
    # And one log line says so, with the fields Contributor Insights reads
    line = next(p for p in log_lines(caplog) if p["message"] == "record done")
    assert {k: line[k] for k in ("lane", "tenant", "outcome", "attempt", "kind", "id")} == {
        "lane": "messages",
        "tenant": "acme",
        "outcome": "done",
        "attempt": 1,
        "kind": "test",
        "id": "job-ok",
    }
    assert line_metric_total(caplog, "Records", Lane="messages", Outcome="done") == 1
    # counted from that line, not written again as a metric document of its own
    assert metric_total(stdout_records(capsys.readouterr().out), "Records") == 0
    assert h.depth() == 0


def test_transient_failure_backs_off_through_visibility_and_notes_the_row(lane, caplog):
    # Given a task that fails transiently, on a lane retrying from 2 s up to 60 s
    h = lane("messages")
    environ = with_lane(h.environ, retry=RetryPolicy(2, 60))
    h.send(h.job_row("job-flaky", {}, tenant="acme", kind="test"))
    handler = h.handler(
        environ, tasks={"messages": Recorder(_raise(TransientError("vendor 503")))}, rng=random.Random(3)
    )
    # When it is received
    response, messages = h.poll(handler)
    # Then it is reported as a batch item failure with a visibility within the first ceiling
    assert response["batchItemFailures"] == [{"itemIdentifier": messages[0]["MessageId"]}]
    change = h.calls.of("ChangeMessageVisibilityBatch")[0]["Entries"][0]
    assert 0 <= change["VisibilityTimeout"] <= 2
    # And the row shows the attempt and the error, and stays pending
    row = h.row("jobs", "job-flaky")
    assert (row["status"], row["attempts"]) == (schema.RowStatus.QUEUED, 1)
    assert "vendor 503" in row["last_error"]
    assert schema.PENDING_SHARD in row
    assert line_metric_total(caplog, "Retried", Lane="messages", ErrorClass="TransientError") == 1


def _visibilities(h, job_id: str, seed: int) -> list[tuple[int, float]]:
    """Fail one message on every receive the queue allows (its redrive moves it to the DLQ on the
    sixth); each time read the visibility the consumer set, then make the message visible again
    instead of waiting it out."""
    h.send(h.job_row(job_id, {}, tenant="acme", kind="test"))
    environ = with_lane(h.environ, retry=RetryPolicy(2, 60), max_receives=10)
    handler = h.handler(environ, tasks={"messages": Recorder(_raise(TransientError("down")))}, rng=random.Random(seed))
    seen = []
    for _ in range(5):
        h.calls.clear()
        _, messages = h.poll(handler)
        entry = h.calls.of("ChangeMessageVisibilityBatch")[0]["Entries"][0]
        seen.append((int(messages[0]["Attributes"]["ApproximateReceiveCount"]), entry["VisibilityTimeout"]))
        h.sqs.change_message_visibility(
            QueueUrl=h.queue_url, ReceiptHandle=messages[0]["ReceiptHandle"], VisibilityTimeout=0
        )
    return seen


def test_backoff_grows_with_the_receive_count_and_is_jittered(lane):
    # Given messages that keep failing transiently, on a lane retrying from 2 s up to 60 s
    h = lane("messages")
    # When one is received five times with one seeded RNG, and another with a different seed
    first = _visibilities(h, "job-backoff-1", seed=11)
    second = _visibilities(h, "job-backoff-2", seed=12)
    # Then each delay stays under its attempt's ceiling (2, 4, 8, 16, 32 s)
    assert [count for count, _ in first] == [1, 2, 3, 4, 5]
    for count, delay in first + second:
        assert 0 <= delay <= 2 * 2 ** (count - 1)
    # And later attempts wait longer than any first attempt could
    assert max(delay for _, delay in first[3:] + second[3:]) > 4
    # And the delays are jittered: another seed gives other delays for the same attempts
    assert [d for _, d in first] != [d for _, d in second]


def test_permanent_failure_goes_to_the_dlq_with_its_reason_and_is_acked(lane, capsys, caplog):
    # Given a task that finds its input unusable
    h = lane("messages")
    h.send(h.job_row("job-bad", {}, tenant="acme", kind="test", queued=1))
    task = Recorder(_raise(PermanentError("bad_input", "rows are missing")))
    # When it is received
    response, _ = h.poll(h.handler(tasks={"messages": task}))
    # Then it is acked (not left to burn receives) and parked in the DLQ with its reason attached
    assert response == {"batchItemFailures": []}
    [dead] = h.dead_letters()
    attributes = {k: v["StringValue"] for k, v in dead["MessageAttributes"].items()}
    assert attributes["reason"] == "bad_input"
    assert attributes["error_class"] == "PermanentError"
    assert (attributes["attempts"], attributes["tenant"], attributes["lane"]) == ("1", "acme", "messages")
    # And the row says failed, leaves the pending index, and the job leaves the tenant's count
    row = h.row("jobs", "job-bad")
    assert row["status"] == schema.RowStatus.FAILED
    assert schema.PENDING_SHARD not in row
    assert "rows are missing" in row["last_error"]
    assert h.state("queued#messages#acme")["queued"] == 0
    # And abandoning it was loud
    assert any(p["level"] == "CRITICAL" and p.get("outcome") == "dead_lettered" for p in log_lines(caplog))
    assert line_metric_total(caplog, "Abandoned", Lane="messages") == 1
    assert line_metric_total(caplog, "Records", Lane="messages", Outcome="dead_lettered") == 1


def test_transient_failure_on_the_last_attempt_is_dead_lettered_with_retries_exhausted(lane):
    # Given a job that already failed four times before it was re-sent (max receives is 5)
    h = lane("messages")
    envelope = h.job_row("job-tired", {}, tenant="acme", kind="test")
    h.send(envelope.with_attempts(4))
    # When its fifth attempt fails transiently
    response, _ = h.poll(h.handler(tasks={"messages": Recorder(_raise(TransientError("still down")))}))
    # Then it stops here, with the reason a redrive would not have given
    assert response == {"batchItemFailures": []}
    [dead] = h.dead_letters()
    assert dead["MessageAttributes"]["reason"]["StringValue"] == "retries_exhausted"
    assert dead["MessageAttributes"]["attempts"]["StringValue"] == "5"
    assert h.row("jobs", "job-tired")["status"] == schema.RowStatus.FAILED


def test_malformed_body_is_dead_lettered_unchanged(lane):
    h = lane("messages")
    h.send_raw("{not an envelope")
    response, _ = h.poll(h.handler(tasks={"messages": Recorder()}))
    assert response == {"batchItemFailures": []}
    [dead] = h.dead_letters()
    assert dead["Body"] == "{not an envelope"
    assert dead["MessageAttributes"]["reason"]["StringValue"] == "malformed"


@pytest.mark.parametrize(("exc", "dead_lettered"), [(RuntimeError("bug"), False), (KeyError("text"), True)])
def test_unexpected_exceptions_are_classified(lane, exc, dead_lettered):
    h = lane("messages")
    h.send(h.job_row("job-x", {}, tenant="acme", kind="test"))
    response, _ = h.poll(h.handler(tasks={"messages": Recorder(_raise(exc))}))
    assert (response["batchItemFailures"] == []) is dead_lettered
    assert (len(h.dead_letters()) == 1) is dead_lettered


def test_a_record_that_cannot_finish_before_the_timeout_is_not_started(lane):
    # Given an invocation with 1.5 s left: after the 1 s reserve, less than the least time worth
    # starting a task under (1 s on this lane: its reserve, or a tenth of its 3 s limit)
    h = lane("messages")
    h.send(h.job_row("job-late", {}, tenant="acme", kind="test"))
    task = Recorder()
    # When the batch is handled
    response, _ = h.poll(h.handler(tasks={"messages": task}), context=Context(1.5))
    # Then the record is not run and not failed back to SQS (that would spend a receive): it is
    # re-sent at once as a deferral carrying no new attempt, and the original acked
    assert response["batchItemFailures"] == []
    assert task.calls == []
    (resend,) = h.calls.of("SendMessageBatch")[0]["Entries"]
    assert resend.get("DelaySeconds", 0) == 0
    copy = json.loads(resend["MessageBody"])
    assert (copy["id"], copy["attempt"], copy["deferrals"]) == ("job-late", 0, 1)
    assert h.row("jobs", "job-late")["status"] == schema.RowStatus.QUEUED


def test_unstarted_records_never_walk_towards_the_dlq(lane):
    # Given a record that keeps arriving at invocations with too little time left to start it
    h = lane("messages")
    h.send(h.job_row("job-starved", {}, tenant="acme", kind="test"))
    task = Recorder()
    max_receives = json.loads(h.environ["LANE"])["max_receives"]
    # When it is received more times than the queue's max receives
    for _ in range(max_receives + 2):
        h.poll(h.handler(tasks={"messages": task}), context=Context(1.5))
    # Then it was never run, nothing reached the DLQ, and one untried copy waits on the lane
    assert task.calls == []
    assert h.dead_letters() == []
    (waiting,) = h.receive()
    assert json.loads(waiting["Body"])["attempt"] == 0
    assert waiting["Attributes"]["ApproximateReceiveCount"] == "1"


def test_a_record_starts_with_less_than_its_limit_and_runs_under_what_the_invocation_has_left(lane):
    # Given an invocation with 3 s left on a lane whose tasks may take 3 s, with a 1 s reserve
    h = lane("messages")
    h.send(h.job_row("job-short", {}, tenant="acme", kind="test"))
    allowed = []
    # When the batch is handled by a quick task
    response, _ = h.poll(
        h.handler(tasks={"messages": Recorder(lambda ctx: allowed.append(ctx.remaining()))}), context=Context(3.0)
    )
    # Then the task ran, under the 2 s left rather than its 3 s limit, and its record is done
    assert response == {"batchItemFailures": []}
    assert 1.5 < allowed[0] <= 2.0
    assert h.row("jobs", "job-short")["status"] == schema.RowStatus.DONE


def test_a_task_stopped_by_the_end_of_the_invocation_is_resent_without_an_attempt(lane, caplog):
    # Given an invocation with 2.2 s left (a 1.2 s limit after the reserve) and a task needing 2 s,
    # within its lane's 3 s limit
    h = lane("messages")
    h.send(h.job_row("job-cut", {}, tenant="acme", kind="test"))
    release = threading.Event()
    # When the batch is handled
    response, _ = h.poll(h.handler(tasks={"messages": Recorder(lambda ctx: release.wait(2.0))}), context=Context(2.2))
    release.set()
    # Then the record is not failed back to SQS and not counted as an attempt: it is re-sent at
    # once with its attempts carried, and its result never lands
    assert response == {"batchItemFailures": []}
    [line] = [line for line in log_lines(caplog) if line.get("outcome") == "cut_short"]
    assert 1.0 < line["detail"]["limit_seconds"] <= 1.2
    (resend,) = h.calls.of("SendMessageBatch")[0]["Entries"]
    copy = json.loads(resend["MessageBody"])
    assert (copy["id"], copy["attempt"]) == ("job-cut", 0)
    assert counter_value(h, "job-cut") == 0
    assert h.row("jobs", "job-cut")["status"] == schema.RowStatus.QUEUED


def test_a_task_past_its_hard_limit_is_retried_and_its_late_result_never_lands(lane, caplog):
    # Given a 1 s function timeout, which leaves a task its least limit (0.5 s), and a task that
    # cannot finish until the test lets it
    h = lane("messages")
    environ = with_lane(h.environ, timeout_seconds=1)
    assert settings.lane(environ).task_time_limit_seconds == 0.5
    h.send(h.job_row("job-slow", {}, tenant="acme", kind="test"))
    release, finished = threading.Event(), threading.Event()

    def stuck(ctx):
        release.wait(10)
        finished.set()

    # When it runs, the consumer stops waiting at the limit and answers while the task is stuck
    response, _ = h.poll(h.handler(environ, tasks={"messages": Recorder(stuck)}))
    assert not finished.is_set()
    # Then the record is retried as a timeout
    assert len(response["batchItemFailures"]) == 1
    [line] = [line for line in log_lines(caplog) if line.get("outcome") == "retried"]
    assert line["error_class"] == "TaskTimeout"
    # And once the task does finish, its effect is still not written
    release.set()
    assert finished.wait(5)
    assert counter_value(h, "job-slow") == 0
    assert h.row("jobs", "job-slow")["status"] == schema.RowStatus.QUEUED


def test_a_row_that_does_not_exist_is_dead_lettered(lane):
    h = lane("messages")
    h.send(h.job_row("job-gone", {}, tenant="acme", kind="test"))
    h.dynamodb.Table("jobs").delete_item(Key={schema.ID: "job-gone"})
    response, _ = h.poll(h.handler(tasks={"messages": Recorder()}))
    assert response == {"batchItemFailures": []}
    assert h.dead_letters()[0]["MessageAttributes"]["reason"]["StringValue"] == "row_missing"


def test_a_task_may_not_write_the_obligation_tables(lane):
    h = lane("messages")
    h.send(h.job_row("job-rogue", {}, tenant="acme", kind="test"))

    def rogue(ctx):
        return TaskResult(writes=(Put(Table.JOBS, {schema.ID: "job-other", "status": "done"}),))

    response, _ = h.poll(h.handler(tasks={"messages": rogue}))
    assert response == {"batchItemFailures": []}
    assert h.dead_letters()[0]["MessageAttributes"]["reason"]["StringValue"] == "task_wrote_obligation"
    assert h.row("jobs", "job-other") is None


def test_a_problem_line_names_the_exception_without_its_payload_text():
    lines: list[tuple[str, dict]] = []

    class Logger:
        def error(self, message, extra, exc_info=False):
            lines.append((message, extra, exc_info))

    from pipeline.adapters.consumer_observer import ConsumerObserver

    try:
        {"+447700900123": 1}["+447700900999"]
    except KeyError as exc:
        ConsumerObserver(Logger(), None, "messages").problem("drain count not recorded", exc)

    [(_message, extra, exc_info)] = lines
    assert "900999" not in repr(extra)
    assert not exc_info
    assert extra["error_class"] == "KeyError"
    assert extra["error"].startswith("KeyError raised in test_outcomes.py:")


def test_what_a_task_ignored_is_counted_by_name():
    from pipeline.adapters.consumer_observer import ConsumerObserver
    from pipeline.domain.consumer import outcomes
    from pipeline.domain.consumer.records import Received
    from pipeline.metric_names import Outcome

    class Metrics:
        def __init__(self) -> None:
            self.documents: list[tuple[dict, dict]] = []
            self._dimensions: dict = {}
            self._metrics: dict = {}

        def add_dimension(self, name, value):
            self._dimensions[name] = value

        def add_metric(self, name, unit, value):
            self._metrics[name] = value

        def flush_metrics(self):
            self.documents.append((self._dimensions, self._metrics))
            self._dimensions, self._metrics = {}, {}

    class Logger:
        def log(self, level, message, extra):
            pass

    metrics = Metrics()
    observer = ConsumerObserver(Logger(), metrics, "messages")
    received = Received(message_id="m-1", receipt_handle="r", body="{}", receive_count=1, sent_at=None, envelope=None)
    for _ in range(2):
        observer.outcome(received, outcomes.acked(Outcome.DONE, 1, ignored={"status.played": 2, "field.mention": 1}))
    observer.flush()

    assert sorted(metrics.documents, key=lambda d: d[0]["Ignored"]) == [
        ({"Lane": "messages", "Ignored": "field.mention"}, {"MetaIgnored": 2}),
        ({"Lane": "messages", "Ignored": "status.played"}, {"MetaIgnored": 4}),
    ]
