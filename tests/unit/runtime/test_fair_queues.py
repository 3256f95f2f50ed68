"""SQS fair queues on the emulated standard queues (local_aws/fair_groups.py), through the real
API: a standard queue whose messages carry a MessageGroupId returns quiet groups' messages before
a noisy group's, the noisy group with the fewest in flight first, forgets a group once drained or
idle, and publishes the fair-queue metrics SQS does. Every test drives boto3 against moto with
the patch installed (tests/conftest.py)."""

from __future__ import annotations

import json
import time
from collections import Counter

import boto3
import pytest
from moto.sqs.models import sqs_backends

from local_aws import queue_metrics
from local_aws.fairness import Fairness
from local_aws.metrics import MetricsStore
from local_aws.moto_sqs import counts_of, fair_counts_of, index_of
from stacks.config.environments import ENVIRONMENTS
from tests.support.aws import REGION

ACCOUNT = "123456789012"
LANE_BATCH_SIZES = sorted({lane.policy.batch_size for lane in ENVIRONMENTS["local"].lanes})


@pytest.fixture
def sqs(aws):
    return boto3.client("sqs", region_name=REGION)


def _queue(sqs, name: str = "lane", **attributes: str) -> str:
    return sqs.create_queue(QueueName=name, Attributes=attributes)["QueueUrl"]


def _backend_queue(name: str = "lane"):
    return sqs_backends[ACCOUNT][REGION].queues[name]


def _send(sqs, url: str, group: str, n: int = 1, **extra) -> None:
    for start in range(0, n, 10):
        entries = [
            {"Id": str(i), "MessageBody": f"{group}-{start + i}", "MessageGroupId": group, **extra}
            for i in range(min(10, n - start))
        ]
        sqs.send_message_batch(QueueUrl=url, Entries=entries)


def _receive(sqs, url: str, n: int, visibility: int = 30) -> list[dict]:
    return sqs.receive_message(
        QueueUrl=url, MaxNumberOfMessages=n, VisibilityTimeout=visibility, MessageSystemAttributeNames=["All"]
    ).get("Messages", [])


def _hold(sqs, url: str, batch: int, total: int) -> list[dict]:
    """A consumer that has received `total` messages, `batch` at a time, and not yet finished them."""
    held: list[dict] = []
    while len(held) < total:
        held += _receive(sqs, url, min(batch, total - len(held)))
    return held


def _groups(messages: list[dict]) -> list[str]:
    return [m["Attributes"]["MessageGroupId"] for m in messages]


def _delete(sqs, url: str, messages: list[dict]) -> None:
    for message in messages:
        sqs.delete_message(QueueUrl=url, ReceiptHandle=message["ReceiptHandle"])


@pytest.mark.parametrize("batch", LANE_BATCH_SIZES)
def test_quiet_tenants_messages_come_first_at_the_consumers_batch_size(sqs, batch):
    # Given a page flooding the lane with 300 comments, 30 of them in flight with the consumers
    url = _queue(sqs)
    _send(sqs, url, "page-flood", 300)
    _hold(sqs, url, batch, 30)
    # When two quiet pages send one comment each, after the flood
    _send(sqs, url, "page-a")
    _send(sqs, url, "page-b")
    # Then the next receives return the quiet pages' comments first, at the consumer's batch size
    got = _groups(_hold(sqs, url, batch, 2))
    assert got[:2] == ["page-a", "page-b"]
    # And the flood still gets every slot nobody else wants
    assert set(_groups(_receive(sqs, url, batch))) == {"page-flood"}


def test_without_a_noisy_group_a_fair_queue_is_oldest_first(sqs):
    # Given three tenants with a few messages each, none noisy
    url = _queue(sqs)
    for group in ("a", "b", "c"):
        _send(sqs, url, group, 3)
    # When a consumer receives them
    got = [m["Body"] for m in _hold(sqs, url, 10, 9)]
    # Then they come in the order they were sent, as on any standard queue
    assert got == [f"{g}-{n}" for g in ("a", "b", "c") for n in range(3)]
    assert fair_counts_of(_backend_queue()).noisy_groups == 0


def test_among_noisy_groups_the_one_with_fewest_in_flight_comes_first(sqs):
    # Given two noisy tenants, the older flood 30 in flight and the newer one 30 in flight
    url = _queue(sqs)
    _send(sqs, url, "old-flood", 100)
    _hold(sqs, url, 10, 30)
    _send(sqs, url, "new-flood", 100)
    newer = _hold(sqs, url, 10, 30)
    assert set(_groups(newer)) == {"new-flood"}  # quiet until it crossed, so served first
    assert fair_counts_of(_backend_queue()).noisy_groups == 2
    # When the newer flood finishes 20 of its messages
    _delete(sqs, url, newer[:20])
    # Then it has the fewest in flight, and its messages come before the older flood's
    assert set(_groups(_hold(sqs, url, 10, 20))) == {"new-flood"}
    # And once both hold 30 again, the older flood comes first and the two take turns
    turns = _groups(_receive(sqs, url, 10))
    assert turns[0] == "old-flood"
    assert Counter(turns) == {"old-flood": 5, "new-flood": 5}


def test_a_group_stops_being_noisy_when_drained(sqs):
    # Given a noisy tenant
    url = _queue(sqs)
    _send(sqs, url, "flood", 40)
    held = _hold(sqs, url, 10, 40)
    assert fair_counts_of(_backend_queue()).noisy_groups == 1
    # When every one of its messages is finished
    _delete(sqs, url, held)
    # Then it is quiet again: its next message competes by age with everyone else's
    assert fair_counts_of(_backend_queue()).noisy_groups == 0
    _send(sqs, url, "flood")
    _send(sqs, url, "other")
    assert _groups(_receive(sqs, url, 10)) == ["flood", "other"]


def test_a_noisy_group_that_sends_nothing_for_the_idle_time_is_quiet_again(sqs):
    # Given a noisy tenant with a backlog, on a queue whose idle time is 300 s
    url = _queue(sqs)
    _send(sqs, url, "flood", 100)
    _hold(sqs, url, 10, 30)
    index = index_of(_backend_queue())
    index.groups.fairness = Fairness(idle_seconds=300)
    now = time.time() * 1000
    # When it has sent nothing for a little less than the idle time, it is still noisy
    assert index.fair_counts(now + 299_000).noisy_groups == 1
    # Then once it has sent nothing for longer, it is quiet, its backlog counted as quiet
    after = index.fair_counts(now + 301_000)
    assert (after.noisy_groups, after.visible_in_quiet + after.in_flight_in_quiet) == (0, 100)


def test_a_group_holding_most_of_the_recent_processing_time_is_noisy(sqs):
    # Given a tenant whose messages are slow to process, and a tenant whose messages are quick
    url = _queue(sqs)
    _send(sqs, url, "slow", 2)
    _send(sqs, url, "quick", 20)
    index = index_of(_backend_queue())
    slow, slow_again = _receive(sqs, url, 2)
    # When the consumer holds one slow message for 5 s (the index's clock, moved on), then
    # finishes ten quick ones at once and gives the other slow one back
    index.delete(slow["ReceiptHandle"], now_ms=time.time() * 1000 + 5_000)
    _delete(sqs, url, _receive(sqs, url, 10))
    sqs.change_message_visibility(QueueUrl=url, ReceiptHandle=slow_again["ReceiptHandle"], VisibilityTimeout=0)
    # Then the slow tenant is noisy though it never had 30 in flight, and its message, the
    # oldest, waits until the quick tenant's are taken
    assert [g.name for g in fair_counts_of(_backend_queue()).noisy] == ["slow"]
    assert set(_groups(_hold(sqs, url, 10, 10))) == {"quick"}
    assert _groups(_receive(sqs, url, 10)) == ["slow"]


def test_the_fair_queue_metrics_count_only_quiet_groups(sqs):
    # Given a noisy tenant (300 queued, 30 in flight) and two quiet ones, one of them delayed
    url = _queue(sqs, "fair-lane")
    _send(sqs, url, "page-flood", 300)
    _hold(sqs, url, 10, 30)
    sqs.send_message(QueueUrl=url, MessageBody="a", MessageGroupId="page-a")
    sqs.send_message(QueueUrl=url, MessageBody="b", MessageGroupId="page-b", DelaySeconds=60)
    (quiet_in_flight,) = _receive(sqs, url, 1)
    assert quiet_in_flight["Attributes"]["MessageGroupId"] == "page-a"
    sent_a = int(quiet_in_flight["Attributes"]["SentTimestamp"])
    # When the metrics are sampled
    store = MetricsStore()
    queue_metrics.record(store, ["fair-lane"])

    def latest(metric: str) -> float | None:
        return store.latest("AWS/SQS", metric, {"QueueName": "fair-lane"})

    # Then they publish the noisy groups and what the quiet groups hold, under SQS's names
    assert latest("ApproximateNumberOfNoisyGroups") == 1
    assert latest("ApproximateNumberOfMessagesVisibleInQuietGroups") == 0
    assert latest("ApproximateNumberOfMessagesNotVisibleInQuietGroups") == 1
    assert latest("ApproximateNumberOfMessagesDelayedInQuietGroups") == 1
    assert latest("ApproximateNumberOfMessagesVisible") == 270
    assert latest("ApproximateNumberOfMessagesNotVisible") == 31
    # And the quiet groups' oldest message is page-a's, not the flood's older ones
    assert fair_counts_of(_backend_queue("fair-lane")).oldest_quiet_sent_ms == sent_a
    quiet_age = latest("ApproximateAgeOfOldestMessageInQuietGroups")
    assert quiet_age is not None
    assert quiet_age <= latest("ApproximateAgeOfOldestMessage")
    sample = queue_metrics.sample("fair-lane")
    assert [(g.name, g.visible, g.in_flight) for g in sample.noisy] == [("page-flood", 270, 30)]


def test_a_noisy_groups_message_still_comes_back_after_visibility_and_reaches_the_dlq(sqs):
    # Given a lane with a dead-letter queue after 2 receives, and a noisy tenant
    dlq_url = _queue(sqs, "lane-dlq")
    dlq_arn = sqs.get_queue_attributes(QueueUrl=dlq_url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    url = _queue(sqs, RedrivePolicy=json.dumps({"deadLetterTargetArn": dlq_arn, "maxReceiveCount": "2"}))
    _send(sqs, url, "flood", 40)
    held = _hold(sqs, url, 10, 40)
    assert fair_counts_of(_backend_queue()).noisy_groups == 1
    # When the consumer gives one back twice (a visibility change to 0, as a retry does)
    poison = held[0]
    sqs.change_message_visibility(QueueUrl=url, ReceiptHandle=poison["ReceiptHandle"], VisibilityTimeout=0)
    (again,) = _receive(sqs, url, 10)
    assert (again["MessageId"], again["Attributes"]["ApproximateReceiveCount"]) == (poison["MessageId"], "2")
    sqs.change_message_visibility(QueueUrl=url, ReceiptHandle=again["ReceiptHandle"], VisibilityTimeout=0)
    # Then the next receive moves it to the dead-letter queue, with its tenant, and the counts follow
    assert _receive(sqs, url, 10) == []
    (dead,) = _receive(sqs, dlq_url, 10)
    assert (dead["MessageId"], dead["Attributes"]["MessageGroupId"]) == (poison["MessageId"], "flood")
    assert counts_of(_backend_queue()).in_flight == 39
    # And finishing the rest drains the tenant
    _delete(sqs, url, held[1:])
    assert (counts_of(_backend_queue()).in_flight, fair_counts_of(_backend_queue()).noisy_groups) == (0, 0)


def test_purge_forgets_every_group(sqs):
    url = _queue(sqs)
    _send(sqs, url, "flood", 40)
    _hold(sqs, url, 10, 30)
    sqs.purge_queue(QueueUrl=url)
    counts = fair_counts_of(_backend_queue())
    assert (counts.noisy_groups, counts.visible_in_quiet, counts.in_flight_in_quiet) == (0, 0, 0)
    _send(sqs, url, "flood", 2)
    assert Counter(_groups(_receive(sqs, url, 10))) == {"flood": 2}


def test_a_fifo_queue_publishes_no_fair_queue_metrics(sqs):
    # Given a FIFO queue (SQS publishes the fair-queue metrics for standard queues only)
    url = _queue(sqs, "lane.fifo", FifoQueue="true", ContentBasedDeduplication="true")
    sqs.send_message(QueueUrl=url, MessageBody="m", MessageGroupId="g")
    # When its metrics are sampled
    store = MetricsStore()
    queue_metrics.record(store, ["lane.fifo"])
    # Then it has the queue's own figures and none of the fair-queue ones
    assert store.latest("AWS/SQS", "ApproximateNumberOfMessagesVisible", {"QueueName": "lane.fifo"}) == 1
    assert store.latest("AWS/SQS", "ApproximateNumberOfNoisyGroups", {"QueueName": "lane.fifo"}) is None
