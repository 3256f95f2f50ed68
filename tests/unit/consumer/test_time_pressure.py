"""Slow dependencies and short invocations: a consumer never spends a receive on a record it did
not attempt, and an invocation that runs out of time anyway is counted.

The slowness is real: the handler's boto3 calls go to moto and their answers come back late (a
`after-call` hook sleeps), so the consumer sees the latency it would see from AWS. The harness
plays Lambda's timeout: a response given after the deadline is lost and nothing is deleted.
"""

from __future__ import annotations

import json
import threading
import time

from pipeline import metric_names, schema
from tests.unit.consumer.fakes import Recorder
from tests.unit.consumer.handler_output import log_lines, metric_total, stdout_records
from tests.unit.consumer.handler_seams import Context

OUT_OF_TIME_LINE = "invocation ran out of time before its batch settled"


def _jobs(h, count: int) -> list[str]:
    ids = [f"job-{n}" for n in range(count)]
    for job_id in ids:
        h.send(h.job_row(job_id, {}, tenant="acme", kind="test"))
    return ids


def _outcomes(caplog) -> list[str]:
    return [line["outcome"] for line in log_lines(caplog) if line["message"].startswith("record ")]


def test_when_no_record_could_be_finished_and_settled_in_time_none_is_started(lane, capsys, caplog):
    # Given six jobs, and a consumer whose DynamoDB and SQS calls each take 0.6 s, with 3.9 s left:
    # finishing one record (its quota, its commit) and then settling (the lease's release, the
    # re-send, the drain count) would take longer than that
    h = lane("messages")
    ids = _jobs(h, 6)
    task = Recorder()
    slow = h.handler(tasks={"messages": task}, slow={"dynamodb": 0.6, "sqs": 0.6})
    # When it receives them
    response, _ = h.poll(slow, context=Context(3.9))
    # Then it answered before its deadline, having started nothing and failed nothing back: every
    # record was re-sent untried and its original acked, so no receive was spent
    assert response == {"batchItemFailures": []}
    assert task.calls == []
    assert _outcomes(caplog) == ["not_started"] * 6
    assert metric_total(stdout_records(capsys.readouterr().out), metric_names.OUT_OF_TIME, Lane="messages") == 0
    copies = h.receive(10)
    assert sorted(json.loads(c["Body"])["id"] for c in copies) == ids
    assert all(json.loads(c["Body"])["attempt"] == 0 for c in copies)
    # And when the copies reach a consumer whose calls are quick, each is done on its first receive
    assert h.invoke(h.handler(tasks={"messages": task}), copies) == {"batchItemFailures": []}
    assert sorted(task.calls) == ids
    assert {c["Attributes"]["ApproximateReceiveCount"] for c in copies} == {"1"}
    assert all(h.row("jobs", job_id)["status"] == schema.RowStatus.DONE for job_id in ids)
    assert h.dead_letters() == []
    assert h.depth() == 0


def test_under_slow_calls_each_record_is_either_attempted_or_re_sent_and_none_is_dead_lettered(lane, capsys, caplog):
    # Given ten jobs, and a consumer whose DynamoDB and SQS calls each take 0.15 s, with 4 s left:
    # time for some of them and the batch's settling, not for all
    h = lane("messages")
    ids = _jobs(h, 10)
    task = Recorder()
    slow = h.handler(tasks={"messages": task}, slow={"dynamodb": 0.15, "sqs": 0.15})
    # When it receives them
    response, _ = h.poll(slow, context=Context(4.0))
    # Then nothing is failed back and it answered before its deadline
    assert response == {"batchItemFailures": []}
    assert metric_total(stdout_records(capsys.readouterr().out), metric_names.OUT_OF_TIME, Lane="messages") == 0
    # And every record is either done (attempted) or waiting on the lane as an untried copy, once
    attempted = set(task.calls)
    copies = h.receive(10)
    resent = [json.loads(c["Body"]) for c in copies]
    resent_ids = [copy["id"] for copy in resent]
    assert attempted
    assert resent_ids
    assert attempted.isdisjoint(resent_ids)
    assert sorted([*attempted, *resent_ids]) == ids
    assert all(copy["attempt"] == 0 for copy in resent)
    assert all(h.row("jobs", job_id)["status"] == schema.RowStatus.DONE for job_id in attempted)
    assert sorted(_outcomes(caplog)) == sorted(["done"] * len(attempted) + ["not_started"] * len(resent_ids))
    # And when the copies reach a consumer whose calls are quick, each is done on its first
    # receive, and the dead-letter queue never saw any record
    assert h.invoke(h.handler(tasks={"messages": task}), copies) == {"batchItemFailures": []}
    assert {c["Attributes"]["ApproximateReceiveCount"] for c in copies} == {"1"}
    assert sorted(task.calls) == ids
    assert h.dead_letters() == []
    assert h.depth() == 0


def test_an_invocation_that_runs_out_of_time_anyway_is_counted_while_it_still_runs(lane, capsys, caplog):
    # Given a consumer whose SQS and DynamoDB calls take 1.5 s, and an invocation with 0.5 s left:
    # too little to start anything, and too little even to re-send what it does not start
    h = lane("messages")
    _jobs(h, 2)
    handler = h.handler(tasks={"messages": Recorder()}, slow={"dynamodb": 1.5, "sqs": 1.5})
    messages = h.receive(10)
    result: dict = {}
    runner = threading.Thread(target=lambda: result.update(h.invoke(handler, messages, Context(0.5))))
    # When it runs
    runner.start()
    # Then it says it ran out of time before Lambda would stop it: while still in its re-send
    deadline = time.monotonic() + 5
    while OUT_OF_TIME_LINE not in [line["message"] for line in log_lines(caplog)] and time.monotonic() < deadline:
        time.sleep(0.02)
    assert runner.is_alive()
    (line,) = [line for line in log_lines(caplog) if line["message"] == OUT_OF_TIME_LINE]
    assert (line["lane"], line["records"]) == ("messages", 2)
    runner.join(5)
    # And the invocation is counted once, though it did end (late) here, where nothing stopped it
    assert result["timed_out"]
    assert metric_total(stdout_records(capsys.readouterr().out), metric_names.OUT_OF_TIME, Lane="messages") == 1
