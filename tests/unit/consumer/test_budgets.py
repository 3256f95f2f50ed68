"""Budgets: the tenant in-flight quota and the shared dependency budget, enforced or observed,
held as leases that a crash cannot leak."""

from __future__ import annotations

import json
import threading
import time

import boto3

from pipeline import schema
from pipeline.adapters.leases import LeaseBudgets
from pipeline.domain.dependencies import budgets
from pipeline.domain.envelope import Envelope
from tests.support.aws import REGION
from tests.unit.consumer.fakes import ConcurrencyProbe, Recorder
from tests.unit.consumer.handler_output import line_metric_total, log_lines
from tests.unit.consumer.handler_seams import Clock
from tests.unit.consumer.lane_env import internal, tenant_cap, with_dependency, with_lane


def _quota_writes(h) -> list[dict]:
    return [p for p in h.calls.of("UpdateItem") if p["Key"][schema.PK]["S"].startswith("quota#")]


def _leases(item: dict) -> list[str]:
    return [name for name in item if name.startswith(budgets.LEASE_PREFIX)]


def _holder() -> LeaseBudgets:
    """Another consumer instance, taking slots of the same budgets."""
    return LeaseBudgets(boto3.client("dynamodb", region_name=REGION), "state", time.time)


def _send_pages(h, page_a: int) -> None:
    """`page_a` comments from page A, then two from page B."""
    for n in range(page_a):
        h.send(internal("engagement", f"a-{n}", "comment", {}, tenant="page-a"))
    h.send(internal("engagement", "b-0", "comment", {}, tenant="page-b"))
    h.send(internal("engagement", "b-1", "comment", {}, tenant="page-b"))


def test_a_flood_from_one_tenant_runs_under_one_slot_while_others_proceed(lane):
    # Given a batch of ten: eight comments from page A, two from page B, and a quota of 4 per page
    h = lane("engagement")
    environ = with_lane(h.environ, tenant_quota=tenant_cap(4), defer_seconds=2)
    _send_pages(h, 8)
    task = Recorder()
    # When the consumer takes the batch
    response, messages = h.poll(h.handler(environ, tasks={"engagement": task}))
    assert len(messages) == 10
    # Then every record runs and none is re-sent: the batch runs them one by one, one slot a page
    assert response == {"batchItemFailures": []}
    assert sorted(task.calls) == sorted([f"a-{n}" for n in range(8)] + ["b-0", "b-1"])
    assert h.calls.of("SendMessageBatch") == []
    # And the quota cost one update to take one slot and one to give it back per tenant
    writes = _quota_writes(h)
    assert len(writes) == 4
    taken = [w for w in writes if "SET" in w["UpdateExpression"]]
    assert [int(w["ExpressionAttributeValues"][":delta"]["N"]) for w in taken] == [1, 1]
    for tenant in ("page-a", "page-b"):
        item = h.state(f"quota#engagement#{tenant}")
        assert item[budgets.IN_USE] == 0
        assert _leases(item) == []


def test_a_tenant_whose_every_slot_is_held_elsewhere_is_deferred_while_others_proceed(lane):
    # Given page A's quota of 2 held whole by two other consumers, and a batch of six from page A
    # and two from page B
    h = lane("engagement")
    environ = with_lane(h.environ, tenant_quota=tenant_cap(2), defer_seconds=2)
    quota = budgets.tenant_quota("engagement", "page-a", 2, "enforce")
    held = [_holder().acquire(quota, 1, 60) for _ in range(2)]
    assert [grant.granted for grant in held] == [1, 1]
    _send_pages(h, 6)
    task = Recorder()
    # When the consumer takes the batch
    response, messages = h.poll(h.handler(environ, tasks={"engagement": task}))
    assert len(messages) == 8
    # Then page B's work runs, and all of page A's is deferred, not failed
    assert response == {"batchItemFailures": []}
    assert sorted(task.calls) == ["b-0", "b-1"]
    [resend] = h.calls.of("SendMessageBatch")
    assert len(resend["Entries"]) == 6
    for entry in resend["Entries"]:
        assert 2 <= entry["DelaySeconds"] <= 3
        assert entry["MessageGroupId"] == "page-a"
        body = Envelope.from_json(entry["MessageBody"])
        assert (body.deferrals, body.attempt) == (1, 0)
    # And the holders' slots are untouched: page A's two leases, page B's given back
    item = h.state("quota#engagement#page-a")
    assert item[budgets.IN_USE] == 2
    assert sorted(_leases(item)) == sorted(budgets.LEASE_PREFIX + str(grant.lease_id) for grant in held)
    assert h.state("quota#engagement#page-b")[budgets.IN_USE] == 0


def test_deferral_never_moves_work_towards_the_dlq(lane):
    # Given a tenant whose only slot is held by another consumer, and a lane that dead-letters
    # after 6 receives
    h = lane("engagement")
    environ = with_lane(h.environ, tenant_quota=tenant_cap(1), defer_seconds=0)
    holder = _holder()
    held = holder.acquire(budgets.tenant_quota("engagement", "page-a", 1, "enforce"), 1, 60)
    assert held.granted == 1
    h.send(internal("engagement", "c-1", "comment", {}, tenant="page-a"))
    task = Recorder()
    handler = h.handler(environ, tasks={"engagement": task})
    # When it is deferred eight times over
    for expected in range(1, 9):
        response, [message] = h.poll(handler)
        # Then every copy is a first receive, carrying its deferral count, and none is dead-lettered
        assert message["Attributes"]["ApproximateReceiveCount"] == "1"
        assert Envelope.from_json(message["Body"]).deferrals == expected - 1
        assert response == {"batchItemFailures": []}
    assert task.calls == []
    assert h.dead_letters() == []
    # And once the slot is free, the work runs, with no attempt spent on waiting
    holder.release(held)
    response, [message] = h.poll(handler)
    assert task.calls == ["c-1"]
    assert Envelope.from_json(message["Body"]).attempt == 0


def test_observe_mode_defers_nothing_but_counts_what_it_would_have_deferred(lane, capsys, caplog):
    # Given a quota of 1 being rolled out in observe mode, its slot held by another consumer, and
    # five records from one tenant
    h = lane("engagement")
    environ = with_lane(h.environ, tenant_quota=tenant_cap(1, "observe"))
    assert _holder().acquire(budgets.tenant_quota("engagement", "page-a", 1, "observe"), 1, 60).granted == 1
    for n in range(5):
        h.send(internal("engagement", f"o-{n}", "comment", {}, tenant="page-a"))
    task = Recorder()
    # When the batch runs
    response, _ = h.poll(h.handler(environ, tasks={"engagement": task}))
    # Then all five run and none is re-sent
    assert response == {"batchItemFailures": []}
    assert len(task.calls) == 5
    assert h.calls.of("SendMessageBatch") == []
    # And five would-defers are logged (with the tenant) and counted: enforced, the whole batch
    # would have waited for the slot
    would = [line for line in log_lines(caplog) if line.get("outcome") == "would_defer"]
    assert len(would) == 5
    assert {line["tenant"] for line in would} == {"page-a"}
    assert line_metric_total(caplog, "Records", Lane="engagement", Outcome="would_defer") == 5
    assert line_metric_total(caplog, "Records", Lane="engagement", Outcome="done") == 5


def test_leases_of_a_crashed_consumer_expire_and_free_the_quota(aws, deployed):
    # Given a consumer that took all 4 slots of a tenant's quota and then crashed (never gave back)
    clock = Clock(now=1_800_000_000.0)
    leases = LeaseBudgets(boto3.client("dynamodb", region_name=REGION), "state", clock)
    quota = budgets.tenant_quota("engagement", "page-a", 4, "enforce")
    assert leases.acquire(quota, 4, hold_seconds=10).granted == 4
    # When another consumer asks before the leases expire, it gets nothing
    clock.advance(5)
    refused = leases.acquire(quota, 2, hold_seconds=10)
    assert (refused.granted, refused.over) == (0, 2)
    # And once they have expired, it gets its slots, and the dead lease is purged
    clock.advance(6)
    granted = leases.acquire(quota, 2, hold_seconds=10)
    assert granted.granted == 2
    item = boto3.resource("dynamodb", region_name=REGION).Table("state").get_item(Key={schema.PK: quota.key})["Item"]
    assert item[budgets.IN_USE] == 2
    assert _leases(item) == [budgets.LEASE_PREFIX + str(granted.lease_id)]
    # And giving those back leaves the budget empty
    leases.release(granted)
    item = boto3.resource("dynamodb", region_name=REGION).Table("state").get_item(Key={schema.PK: quota.key})["Item"]
    assert (item[budgets.IN_USE], _leases(item)) == (0, [])


def test_a_consumer_proceeds_once_a_crashed_consumers_lease_expires(lane):
    # Given page A's quota of 1 held by a consumer that crashed a minute ago with a 30 s lease
    h = lane("engagement")
    environ = with_lane(h.environ, tenant_quota=tenant_cap(1))
    crashed = LeaseBudgets(boto3.client("dynamodb", region_name=REGION), "state", lambda: time.time() - 60)
    crashed.acquire(budgets.tenant_quota("engagement", "page-a", 1, "enforce"), 1, 30)
    h.send(internal("engagement", "c-2", "comment", {}, tenant="page-a"))
    task = Recorder()
    # When a healthy consumer takes the record
    h.poll(h.handler(environ, tasks={"engagement": task}))
    # Then it runs
    assert task.calls == ["c-2"]


def _drain_concurrently(h, handlers, total: int, probe: ConcurrencyProbe, *, batch: int = 1) -> None:
    def worker(handler):
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            with probe.lock:
                if len(probe.completed) >= total:
                    return
            h.poll(handler, limit=batch)

    threads = [threading.Thread(target=worker, args=(handler,)) for handler in handlers]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(20)


def test_a_tenant_cap_of_two_is_never_exceeded_by_three_concurrent_consumers(lane):
    # Given a tenant allowed two invocations at once, and nine of its jobs on a lane with no
    # dependency budget of its own
    h = lane("messages")
    environ = with_lane(h.environ, tenant_quota=tenant_cap(2), defer_seconds=0)
    for n in range(9):
        h.send(h.job_row(f"job-{n}", {}, tenant="acme", kind="test"))
    probe = ConcurrencyProbe(hold=0.1)
    handlers = [h.handler(environ, tasks={"messages": probe}) for _ in range(3)]
    # When three consumer instances work the lane at once, three records a batch
    _drain_concurrently(h, handlers, 9, probe, batch=3)
    # Then every job finished, never more than two of the tenant's at once, and its slots are free
    assert sorted(probe.completed) == sorted(f"job-{n}" for n in range(9))
    assert probe.peak <= 2
    item = h.state("quota#messages#acme")
    assert (item[budgets.IN_USE], _leases(item)) == (0, [])


def test_a_dependency_limit_of_one_is_never_exceeded_by_concurrent_consumers(lane, caplog):
    # Given the llm dependency limited to one call at a time, and four turns on the ai lane
    h = lane("ai")
    environ = with_dependency(with_lane(h.environ, defer_seconds=0), "llm", limit=1)
    for n in range(4):
        h.send(internal("ai", f"turn-{n}", "ai.turn", {}, tenant=f"shop-{n}"))
    probe = ConcurrencyProbe(hold=0.1)
    handlers = [h.handler(environ, tasks={"ai": probe}) for _ in range(3)]
    # When three consumer instances work the lane at once
    _drain_concurrently(h, handlers, 4, probe)
    # Then every turn finished, never more than one inside the budget, and the rest waited by
    # deferral (which cost them no attempt)
    assert sorted(probe.completed) == sorted(f"turn-{n}" for n in range(4))
    assert probe.peak == 1
    deferred = [line for line in log_lines(caplog) if line.get("outcome") == "deferred"]
    assert deferred
    assert all(line["detail"]["budget"] == "dependency" for line in deferred)
    for params in h.calls.of("SendMessageBatch"):
        for entry in params["Entries"]:
            assert json.loads(entry["MessageBody"]).get("attempt", 0) == 0
    assert h.state("dependency#llm")[budgets.IN_USE] == 0


def test_a_dependency_budget_in_observe_mode_lets_calls_through_and_counts_them(lane, caplog):
    h = lane("ai")
    environ = with_dependency(h.environ, "llm", limit=1, mode="observe")
    for n in range(3):
        h.send(internal("ai", f"turn-{n}", "ai.turn", {}, tenant=f"shop-{n}"))
    messages = h.receive(10)
    probe = ConcurrencyProbe(hold=0.3)
    threads = [threading.Thread(target=h.invoke, args=(h.handler(environ, tasks={"ai": probe}), [m])) for m in messages]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(5)
    assert len(probe.completed) == 3
    assert probe.peak >= 2
    would = [line for line in log_lines(caplog) if line.get("outcome") == "would_defer"]
    assert would
    assert all(line["budget"] == "dependency" for line in would)
    assert [line for line in log_lines(caplog) if line.get("outcome") == "deferred"] == []


def test_a_lane_without_a_tenant_quota_writes_no_tenant_bookkeeping(lane):
    # Given a lane configured with no per-tenant cap and a batch from two tenants
    h = lane("engagement")
    environ = with_lane(h.environ, tenant_quota=None)
    for n in range(6):
        h.send(internal("engagement", f"a-{n}", "comment", {}, tenant="page-a"))
    h.send(internal("engagement", "b-0", "comment", {}, tenant="page-b"))
    task = Recorder()
    # When the consumer takes the batch
    response, messages = h.poll(h.handler(environ, tasks={"engagement": task}))
    # Then every record runs, nothing is deferred, and no quota item is read or written
    assert len(messages) == 7
    assert response == {"batchItemFailures": []}
    assert sorted(task.calls) == sorted([f"a-{n}" for n in range(6)] + ["b-0"])
    assert h.calls.of("SendMessageBatch") == []
    assert _quota_writes(h) == []
    assert h.state("quota#engagement#page-a") is None


def _answer_lost_once(operation: str):
    """A DynamoDB client whose first `operation` reaches DynamoDB twice, as when the answer to the
    first sending is lost and the SDK sends the same request again: the first application is
    made with the same parameters just before the call goes out."""
    client, first = boto3.client("dynamodb", region_name=REGION), boto3.client("dynamodb", region_name=REGION)
    lost: list[dict] = []

    def apply_first(params: dict, **_: object) -> None:
        if not lost:
            lost.append(params)
            first.update_item(**params)  # applied; its answer never came back

    client.meta.events.register(f"provide-client-params.dynamodb.{operation}", apply_first)
    return client, lost


def test_a_lease_whose_answer_was_lost_and_resent_by_the_sdk_takes_its_slots_once(aws, deployed):
    # Given a dependency budget of 3, and a client whose first UpdateItem reaches DynamoDB twice
    client, lost = _answer_lost_once("UpdateItem")
    leases = LeaseBudgets(client, "state", Clock(now=1_800_000_000.0))
    llm = budgets.dependency("llm", 3, "enforce")
    # When a consumer takes one slot
    grant = leases.acquire(llm, 1, hold_seconds=30)
    # Then the request was sent twice, the slot is granted, and the counter holds it once
    [applied_first] = lost
    assert "#lease" in applied_first["UpdateExpression"]
    assert (grant.granted, grant.slots) == (1, 1)
    table = boto3.resource("dynamodb", region_name=REGION).Table("state")
    item = table.get_item(Key={schema.PK: llm.key})["Item"]
    assert (item[budgets.IN_USE], _leases(item)) == (1, [budgets.LEASE_PREFIX + str(grant.lease_id)])
    # And giving it back leaves the whole budget free for others
    leases.release(grant)
    assert table.get_item(Key={schema.PK: llm.key})["Item"][budgets.IN_USE] == 0
    assert _holder().acquire(llm, 3, hold_seconds=30).granted == 3
