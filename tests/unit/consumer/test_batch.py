"""ReportBatchItemFailures, exactly: one bad record never fails the records beside it."""

from __future__ import annotations

from pipeline import schema
from pipeline.domain.errors import TransientError
from tests.unit.consumer.fakes import Recorder, counter_value
from tests.unit.consumer.lane_env import internal


def test_a_poison_record_in_a_batch_of_ten_leaves_the_other_nine_acked(lane):
    # Given ten jobs, one of which crashes its task every time
    h = lane("messages")
    for n in range(10):
        h.send(h.job_row(f"job-{n}", {}, tenant=f"t{n}", kind="test"))

    def poison(ctx):
        if ctx.envelope.id == "job-4":
            raise RuntimeError("segfault-like bug")

    # When the batch is handled
    response, messages = h.poll(h.handler(tasks={"messages": Recorder(poison)}))
    assert len(messages) == 10
    # Then only the poison record is reported; the nine others are done and deleted
    poison_id = next(m["MessageId"] for m in messages if '"job-4"' in m["Body"])
    assert response == {"batchItemFailures": [{"itemIdentifier": poison_id}]}
    assert [counter_value(h, f"job-{n}") for n in range(10)] == [1, 1, 1, 1, 0, 1, 1, 1, 1, 1]
    assert h.row("jobs", "job-4")["status"] == schema.RowStatus.QUEUED
    assert h.depth() == 1


def test_a_malformed_record_and_a_transient_one_do_not_disturb_the_rest(lane):
    h = lane("messages")
    h.send_raw("not json at all")
    h.send(internal("messages", "ok-1", "test", {}, tenant="a"))
    h.send(internal("messages", "flaky", "test", {}, tenant="b"))
    h.send(internal("messages", "ok-2", "test", {}, tenant="c"))

    def flaky(ctx):
        if ctx.envelope.id == "flaky":
            raise TransientError("503")

    response, messages = h.poll(h.handler(tasks={"messages": Recorder(flaky)}))
    flaky_id = next(m["MessageId"] for m in messages if '"flaky"' in m["Body"])
    assert response == {"batchItemFailures": [{"itemIdentifier": flaky_id}]}
    assert counter_value(h, "ok-1") == counter_value(h, "ok-2") == 1
    assert len(h.dead_letters()) == 1


def test_when_the_done_check_cannot_be_read_every_record_waits_it_out_and_nothing_raises(lane):
    # Given a consumer whose state table does not exist (a broken deployment: AccessDenied)
    h = lane("messages")
    environ = {**h.environ, "STATE_TABLE": "no-such-table"}
    for n in range(3):
        h.send(internal("messages", f"i-{n}", "test", {}, tenant="a"))
    task = Recorder()
    # When a batch arrives
    response, messages = h.poll(h.handler(environ, tasks={"messages": task}))
    # Then no record is run, and every one goes back to the queue as a deferred copy that has spent
    # no attempt (a bad deploy does not dead-letter the lane's traffic within its retries' span);
    # the invocation succeeds
    assert response["batchItemFailures"] == []
    assert len(messages) == 3
    assert task.calls == []
    assert h.depth() == 3  # the three deferred copies, delayed


def test_an_empty_event_is_an_empty_answer(lane):
    h = lane("messages")
    assert h.handler(tasks={"messages": Recorder()})({"Records": []}, None) == {"batchItemFailures": []}
