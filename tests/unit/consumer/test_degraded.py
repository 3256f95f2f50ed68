"""The consumer when SQS or its own bookkeeping fails, against moto: no record is acked that was
not re-sent or finished, two copies of one piece of work commit once, the drain count the jobs
API admits by is what actually left the lane, and nothing raises out of the handler.

Failures are injected on the handler's own boto3 session (a `before-call` hook that raises what
botocore raises for a refused call), or by wrapping an adapter's method where the fault is ours."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

import boto3
from botocore.exceptions import ClientError

from pipeline import schema, settings
from pipeline.adapters.clients import Clients
from pipeline.adapters.consumer_observer import ConsumerObserver
from pipeline.adapters.lane_views import LaneStateReader
from pipeline.adapters.leases import LeaseBudgets
from pipeline.domain.consumer.marks import marker_key
from pipeline.domain.consumer.work import TaskResult
from pipeline.domain.dependencies import budgets
from pipeline.domain.effects import Check, OnConflict, Table
from pipeline.domain.errors import PermanentError, TransientError
from tests.support.aws import REGION
from tests.unit.consumer.fakes import Recorder, counter_value, counter_write
from tests.unit.consumer.handler_output import log_lines
from tests.unit.consumer.handler_seams import Context
from tests.unit.consumer.lane_env import internal, tenant_cap, with_lane


def refusing(h: Any, operation: str) -> Clients:
    """The handler's clients, with every `operation` call refused by SQS as unavailable."""

    def refuse(**_: Any) -> None:
        raise ClientError({"Error": {"Code": "ServiceUnavailable", "Message": "refused"}}, operation)

    session = boto3.session.Session(region_name=REGION)
    session.events.register("provide-client-params.*.*", h.calls.record)
    session.events.register(f"before-call.sqs.{operation}", refuse)
    return Clients(region=REGION, credentials=settings.credentials(h.environ), _session=session)


def _outcomes(caplog: Any) -> list[str]:
    return [line["outcome"] for line in log_lines(caplog) if line["message"].startswith("record ")]


def _problems(caplog: Any) -> list[str]:
    return [line["message"] for line in log_lines(caplog) if line["level"] == "ERROR"]


def _hold_quota(lane: str, tenant: str, limit: int, mode: str = "enforce") -> None:
    """Every slot of a tenant's quota taken by other consumer instances."""
    holder = LeaseBudgets(boto3.client("dynamodb", region_name=REGION), "state", time.time)
    for _ in range(limit):
        assert holder.acquire(budgets.tenant_quota(lane, tenant, limit, mode), 1, 60).granted == 1


def test_a_deferral_the_queue_refuses_stays_in_the_queue_and_is_reported(lane, caplog):
    # Given a lane allowing one invocation a tenant at once, acme's slot held by another consumer,
    # and a job from bravo and one from acme
    h = lane("messages")
    environ = with_lane(h.environ, tenant_quota=tenant_cap(1), defer_seconds=30)
    _hold_quota("messages", "acme", 1)
    h.send(h.job_row("job-1", {}, tenant="bravo", kind="test"))
    h.send(h.job_row("job-2", {}, tenant="acme", kind="test"))
    # And an SQS that refuses the re-send of the one over quota
    handler = h.handler(environ, tasks={"messages": Recorder()}, clients=refusing(h, "SendMessageBatch"))
    # When the batch is handled
    response, messages = h.poll(handler)
    # Then the deferred record is reported back, not acked: it is still in the queue, and only once
    deferred_id = next(m["MessageId"] for m in messages if '"job-2"' in m["Body"])
    assert response == {"batchItemFailures": [{"itemIdentifier": deferred_id}]}
    assert h.depth() == 1
    assert h.row("jobs", "job-1")["status"] == schema.RowStatus.DONE
    assert h.row("jobs", "job-2")["status"] == schema.RowStatus.QUEUED
    assert "deferrals not re-sent" in _problems(caplog)
    # And it comes back after the deferral's delay, not at once
    assert h.receive(10) == []


def test_a_failed_dead_letter_send_keeps_the_record_until_the_dlq_takes_it(lane, caplog):
    # Given a poison job, and a dead-letter queue SQS will not accept messages for
    h = lane("messages")
    h.send(h.job_row("job-poison", {}, tenant="acme", kind="test"))

    def poison(ctx):
        raise PermanentError("bad_input", "cannot be processed")

    task = Recorder(poison)
    broken = h.handler(tasks={"messages": task}, clients=refusing(h, "SendMessage"))
    # When it fails and cannot be dead-lettered
    response, messages = h.poll(broken)
    # Then it is not acked: it stays in the lane, its row still open, and nothing is in the DLQ
    assert response["batchItemFailures"] == [{"itemIdentifier": messages[0]["MessageId"]}]
    assert h.depth() == 1
    assert h.dead_letters() == []
    assert h.row("jobs", "job-poison")["status"] == schema.RowStatus.QUEUED
    assert _outcomes(caplog) == ["retried"]
    # And once its backoff has passed and the DLQ is back, it is parked there with its reason
    h.sqs.change_message_visibility(
        QueueUrl=h.queue_url, ReceiptHandle=messages[0]["ReceiptHandle"], VisibilityTimeout=0
    )
    response, _ = h.poll(h.handler(tasks={"messages": task}))
    assert response == {"batchItemFailures": []}
    (parked,) = h.dead_letters()
    assert parked["MessageAttributes"]["reason"]["StringValue"] == "bad_input"
    assert h.row("jobs", "job-poison")["status"] == schema.RowStatus.FAILED
    assert h.depth() == 0


def test_of_two_racing_copies_of_a_tick_only_one_commits_its_writes(lane, caplog):
    # Given two copies of one schedule tick, each received by its own consumer instance
    h = lane("messages")
    tick = internal("messages", "tick-race", "test", {})
    h.send(tick)
    h.send(tick)
    messages = h.receive(10)
    assert len(messages) == 2
    # And a task both copies are inside at once (both passed the done-check)
    gate = threading.Barrier(2, timeout=5)
    task = Recorder(lambda ctx: gate.wait())
    responses: list[dict[str, Any]] = []
    threads = [
        threading.Thread(target=lambda m=m: responses.append(h.invoke(h.handler(tasks={"messages": task}), [m])))
        for m in messages
    ]
    # When both finish and commit
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)
    # Then both ran, both are acked, and one effect landed under one done-marker
    assert sorted(task.calls) == ["tick-race", "tick-race"]
    assert responses == [{"batchItemFailures": []}] * 2
    assert counter_value(h, "tick-race") == 1
    assert sorted(_outcomes(caplog)) == ["done", "duplicate"]
    assert h.state(marker_key("messages", "tick-race"))["outcome"] == "done"
    assert h.depth() == 0


def test_a_superseded_result_lands_none_of_its_writes_and_is_marked_superseded(lane, caplog):
    # Given a tick whose task finds newer work that makes its result moot
    h = lane("messages")
    h.send(internal("messages", "tick-old", "test", {}))

    def moot(ctx):
        return TaskResult(writes=(counter_write(ctx.envelope.id),), superseded=True)

    # When it runs
    response, _ = h.poll(h.handler(tasks={"messages": moot}))
    # Then it is acked, its writes are not committed, and its marker says superseded, not done
    assert response == {"batchItemFailures": []}
    assert counter_value(h, "tick-old") == 0
    assert h.state(marker_key("messages", "tick-old"))["outcome"] == "superseded"
    assert _outcomes(caplog) == ["superseded"]


def test_a_result_a_newer_one_overtook_at_commit_lands_none_of_its_writes(lane, caplog):
    # Given a tick whose result holds only while a turn marker is still its own
    h = lane("messages")
    h.dynamodb.Table("state").put_item(Item={schema.PK: "turn#c1", "token": "newer"})
    h.send(internal("messages", "tick-turn", "test", {}))

    def answer(ctx):
        still_mine = Check(
            table=Table.STATE,
            key={schema.PK: "turn#c1"},
            condition="#token = :token",
            names={"#token": "token"},
            values={":token": "mine"},
            on_conflict=OnConflict.SUPERSEDE,
        )
        return TaskResult(writes=(counter_write(ctx.envelope.id), still_mine))

    # When it commits after a newer turn took the marker
    response, _ = h.poll(h.handler(tasks={"messages": answer}))
    # Then its writes are dropped, the record is superseded, and a later copy is a duplicate
    assert response == {"batchItemFailures": []}
    assert counter_value(h, "tick-turn") == 0
    assert _outcomes(caplog) == ["superseded"]
    assert h.state(marker_key("messages", "tick-turn")) is not None


def test_the_drain_count_the_jobs_api_reads_is_what_left_the_lane(lane):
    # Given five jobs: three that succeed, one poison, one that fails transiently
    h = lane("messages")
    for n in range(3):
        h.send(h.job_row(f"ok-{n}", {}, tenant="acme", kind="test"))
    h.send(h.job_row("poison", {}, tenant="acme", kind="test"))
    h.send(h.job_row("flaky", {}, tenant="acme", kind="test"))

    def task(ctx):
        if ctx.envelope.id == "poison":
            raise PermanentError("bad_input", "no")
        if ctx.envelope.id == "flaky":
            raise TransientError("503")

    # When one batch is handled
    h.poll(h.handler(tasks={"messages": Recorder(task)}))
    # Then the lane state the admission controller reads counts the four that left the lane
    reader = LaneStateReader(h.sqs, boto3.client("dynamodb", region_name=REGION), "state", {"messages": h.queue_url})
    snapshot = reader.read("messages", time.time())
    assert snapshot.drained == 4
    assert snapshot.backlog + snapshot.in_flight == 1  # the flaky one, backing off


def raising(error: BaseException) -> Callable[..., Any]:
    """An adapter method replaced by one with a bug: it raises whatever it is given."""

    def broken(*args: Any, **kwargs: Any) -> Any:
        raise error

    return broken


def test_a_batch_whose_own_bookkeeping_fails_reports_every_record_for_retry(lane, caplog, monkeypatch):
    # Given three jobs from one tenant over an observed quota (its slot held by another consumer),
    # and an observer with a bug
    h = lane("messages")
    environ = with_lane(h.environ, tenant_quota=tenant_cap(1, "observe"))
    _hold_quota("messages", "acme", 1, "observe")
    for n in range(3):
        h.send(h.job_row(f"job-{n}", {}, tenant="acme", kind="test"))
    monkeypatch.setattr(ConsumerObserver, "over_budget", raising(RuntimeError("observer bug")))
    task = Recorder()
    # When the batch is handled, nothing raises out of the handler
    response, messages = h.poll(h.handler(environ, tasks={"messages": task}), context=Context(60))
    # Then every record is reported back and stays in the queue; no task ran, no row moved
    assert sorted(f["itemIdentifier"] for f in response["batchItemFailures"]) == sorted(
        m["MessageId"] for m in messages
    )
    assert len(messages) == 3
    assert h.depth() == 3
    assert task.calls == []
    assert {h.row("jobs", f"job-{n}")["status"] for n in range(3)} == {schema.RowStatus.QUEUED}
    assert "batch failed outside any record" in _problems(caplog)
    assert _outcomes(caplog) == ["retried"] * 3
