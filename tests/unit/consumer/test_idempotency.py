"""Exactly one effect per piece of work, however many copies of its message arrive and however
they overlap: duplicates, concurrent copies, a visibility timeout mid-task, a DLQ redrive."""

from __future__ import annotations

import threading
import time

from pipeline import schema
from pipeline.domain.consumer.marks import marker_key
from tests.unit.consumer.fakes import Recorder, counter_value
from tests.unit.consumer.handler_output import log_lines
from tests.unit.consumer.handler_seams import Context
from tests.unit.consumer.lane_env import internal


def _outcomes(caplog) -> list[str]:
    return [line["outcome"] for line in log_lines(caplog) if line["message"].startswith("record ")]


def test_five_deliveries_of_one_job_have_one_effect(lane, caplog):
    # Given the same job's message delivered five times
    h = lane("messages")
    envelope = h.job_row("job-dup", {}, tenant="acme", kind="test", queued=1)
    for _ in range(5):
        h.send(envelope)
    task = Recorder()
    handler = h.handler(tasks={"messages": task})
    # When the consumer works through them, one batch at a time
    for _ in range(5):
        h.poll(handler, limit=1)
    # Then the effect happened once, the rest were cheap acks, and the count came down once
    assert counter_value(h, "job-dup") == 1
    assert sorted(_outcomes(caplog)) == ["done", "duplicate", "duplicate", "duplicate", "duplicate"]
    assert task.calls == ["job-dup"]  # the done-check answered the copies before any task call
    assert h.state("queued#messages#acme")["queued"] == 0
    assert h.depth() == 0


def test_five_concurrent_copies_have_one_effect(lane, caplog):
    # Given five copies of one job, each received by a different consumer instance
    h = lane("messages")
    envelope = h.job_row("job-race", {}, tenant="acme", kind="test", queued=1)
    for _ in range(5):
        h.send(envelope)
    messages = h.receive(10)
    assert len(messages) == 5
    # And a task slow enough that all five are inside it together (all pass the done-check)
    gate = threading.Barrier(5, timeout=5)
    task = Recorder(lambda ctx: gate.wait())
    handlers = [h.handler(tasks={"messages": task}) for _ in range(5)]
    responses: list[dict] = []

    def run(handler, message):
        responses.append(h.invoke(handler, [message]))

    # When the five run at once
    threads = [threading.Thread(target=run, args=(handlers[i], messages[i])) for i in range(5)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)
    # Then all five ran the task, yet exactly one commit landed
    assert len(task.calls) == 5
    assert counter_value(h, "job-race") == 1
    assert sorted(_outcomes(caplog)) == ["done", "duplicate", "duplicate", "duplicate", "duplicate"]
    assert all(r == {"batchItemFailures": []} for r in responses)
    assert h.state("queued#messages#acme")["queued"] == 0


def test_internal_work_is_deduplicated_by_a_marker_that_expires(lane):
    # Given a tick (no row of its own) delivered five times
    h = lane("messages")
    tick = internal("messages", "tick-1", "test.tick", {"n": 1})
    for _ in range(5):
        h.send(tick)
    handler = h.handler(tasks={"messages": Recorder()})
    started = time.time()
    for _ in range(5):
        h.poll(handler, limit=1)
    # Then one effect, and a done-marker that the table's TTL will remove after the idempotency TTL
    assert counter_value(h, "tick-1") == 1
    mark = h.state(marker_key("messages", "tick-1"))
    ttl = int(h.environ["IDEMPOTENCY_TTL_SECONDS"])
    assert started + ttl - 5 <= mark[schema.TTL] <= time.time() + ttl


def test_visibility_expiring_mid_task_lets_a_second_copy_run_but_only_one_result_lands(lane, caplog):
    # Given a job whose first consumer stalls inside the task
    h = lane("messages")
    h.send(h.job_row("job-stall", {}, tenant="acme", kind="test"))
    release = threading.Event()
    stalled = threading.Event()

    def stall_first(ctx):
        if not stalled.is_set():
            stalled.set()
            release.wait(5)

    task = Recorder(stall_first)
    first_copy = h.receive(1, visibility=1)
    first: dict = {}
    runner = threading.Thread(
        target=lambda: first.update(h.invoke(h.handler(tasks={"messages": task}), first_copy, Context(30)))
    )
    runner.start()
    assert stalled.wait(5)
    # When its visibility runs out, SQS hands the same message to a second consumer, which finishes
    time.sleep(1.1)
    second_copy = h.receive(1)
    assert second_copy[0]["Attributes"]["ApproximateReceiveCount"] == "2"
    second = h.invoke(h.handler(tasks={"messages": task}), second_copy)
    # And then the first consumer wakes up and tries to commit
    release.set()
    runner.join(5)
    # Then there is one result: the second copy's; the first found the work done
    assert counter_value(h, "job-stall") == 1
    assert second == {"batchItemFailures": []}
    assert first == {"batchItemFailures": []}
    assert sorted(_outcomes(caplog)) == ["done", "duplicate"]
    assert h.row("jobs", "job-stall")["status"] == schema.RowStatus.DONE


def test_a_redriven_dead_letter_completes_its_row_without_counting_the_job_twice(lane):
    # Given a job that failed permanently, taking the tenant's queued count from 2 to 1
    h = lane("messages")
    envelope = h.job_row("job-redrive", {}, tenant="acme", kind="test", queued=2)
    h.send(envelope)
    broken = {"on": True}

    def flaky_input(ctx):
        if broken["on"]:
            raise ValueError("field missing")

    task = Recorder(flaky_input)
    handler = h.handler(tasks={"messages": task})
    h.poll(handler)
    assert h.row("jobs", "job-redrive")["status"] == schema.RowStatus.FAILED
    assert h.state("queued#messages#acme")["queued"] == 1
    # When the fix is deployed and the dead letter is moved back to the lane
    broken["on"] = False
    [dead] = h.dead_letters()
    h.send_raw(dead["Body"])
    h.poll(handler)
    # Then the row completes, and the count is not taken down a second time
    assert h.row("jobs", "job-redrive")["status"] == schema.RowStatus.DONE
    assert counter_value(h, "job-redrive") == 1
    assert h.state("queued#messages#acme")["queued"] == 1
