"""A lane as admission sees it: its queue's depth and the drain counts in the state table, cached
per instance."""

from __future__ import annotations

import boto3
import pytest

from pipeline.adapters.lane_views import CachedLaneState, LaneStateReader
from pipeline.adapters.state_table import LaneCounts, LaneDrain
from pipeline.domain.jobs import admission
from tests.support.aws import REGION, AwsCalls
from tests.unit.jobs.conftest import NOW, Clock


@pytest.fixture
def reader(deployed) -> LaneStateReader:
    return LaneStateReader(
        boto3.client("sqs", region_name=REGION),
        boto3.client("dynamodb", region_name=REGION),
        deployed.resources.state_table,
        deployed.resources.queue_urls,
    )


@pytest.fixture
def counts(deployed) -> LaneCounts:
    """The consumers' side: what they write as they finish messages."""
    return LaneCounts(boto3.client("dynamodb", region_name=REGION), deployed.resources.state_table)


def test_backlog_counts_waiting_and_delayed_messages_and_in_flight_is_apart(reader, deployed, inspect):
    sqs = boto3.client("sqs", region_name=REGION)
    url = deployed.resources.queue_urls["bulk"]
    inspect.fill("bulk", 5)
    sqs.send_message(QueueUrl=url, MessageBody="{}", DelaySeconds=60)
    sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=2, VisibilityTimeout=300)

    snapshot = reader.read("bulk", NOW)

    assert (snapshot.backlog, snapshot.in_flight) == (4, 2)


def test_drained_sums_the_buckets_of_the_window_and_ignores_older_ones(reader, counts):
    counts.record_drained("bulk", 5, NOW)
    counts.record_drained("bulk", 3, NOW)
    counts.record_drained("bulk", 7, NOW - 60)
    counts.record_drained("bulk", 100, NOW - 120)
    counts.record_drained("ai", 50, NOW)

    snapshot = reader.read("bulk", NOW)

    assert snapshot.drained == 15
    assert snapshot.window_seconds == 60


def test_the_window_starts_at_the_first_bucket_with_work(reader, counts):
    # Given a lane idle for most of the minute, busy for the last 20 s
    counts.record_drained("bulk", 4, NOW - 20)
    counts.record_drained("bulk", 6, NOW - 5)

    snapshot = reader.read("bulk", NOW + 3)

    # Then its pace is measured over those 23 s, not averaged over the idle minute
    assert snapshot.drained == 10
    assert snapshot.window_seconds == 23


def test_no_bucket_at_all_is_no_measurement(reader):
    assert reader.read("bulk", NOW).drained is None


def test_drain_buckets_expire(counts, deployed):
    counts.record_drained("bulk", 1, NOW)

    item = boto3.client("dynamodb", region_name=REGION).get_item(
        TableName=deployed.resources.state_table,
        Key={"pk": {"S": admission.drain_key("bulk", admission.drain_bucket_start(NOW))}},
    )["Item"]
    assert int(item["expires_at"]["N"]) == admission.drain_bucket_start(NOW) + admission.DRAIN_BUCKET_TTL_SECONDS


def test_the_cache_reads_each_lane_once_per_interval(deployed):
    sqs = boto3.client("sqs", region_name=REGION)
    dynamodb = boto3.client("dynamodb", region_name=REGION)
    calls = AwsCalls().watch(sqs, dynamodb)
    clock = Clock()
    cache = CachedLaneState(
        LaneStateReader(sqs, dynamodb, "state", deployed.resources.queue_urls), 1.0, clock, lambda *_: None
    )

    cache.get("bulk")
    cache.get("bulk")
    clock.advance(0.9)
    cache.get("bulk")
    assert len(calls.calls) == 2

    cache.get("ai")
    clock.advance(0.1)
    cache.get("bulk")
    assert len(calls.calls) == 6


def test_a_failed_read_is_reported_and_cached_as_unknown(deployed):
    sqs = boto3.client("sqs", region_name=REGION)
    calls = AwsCalls().watch(sqs)
    calls.fail("sqs.GetQueueAttributes")
    errors = []
    cache = CachedLaneState(
        LaneStateReader(sqs, boto3.client("dynamodb", region_name=REGION), "state", deployed.resources.queue_urls),
        1.0,
        Clock(),
        lambda lane, exc: errors.append(lane),
    )

    assert cache.get("bulk") is None
    assert cache.get("bulk") is None
    assert errors == ["bulk"]
    assert calls.calls == ["sqs.GetQueueAttributes"]


class _FailingOnce(LaneCounts):
    def __init__(self, inner: LaneCounts) -> None:
        self._inner = inner
        self.fail_next = False
        self.writes: list[int] = []

    def record_drained(self, lane: str, count: int, now: float) -> None:
        if self.fail_next:
            self.fail_next = False
            raise RuntimeError("throttled")
        self.writes.append(count)
        self._inner.record_drained(lane, count, now)


def test_an_instance_writes_its_drain_count_at_most_once_a_second_and_loses_none(reader, counts):
    # Given a consumer instance finishing batches faster than once a second
    written = _FailingOnce(counts)
    drain = LaneDrain(written, "bulk")
    # When it records four batches within a second, then one after it
    drain.record(3, NOW)
    drain.record(2, NOW + 0.2)
    drain.record(0, NOW + 0.5)
    drain.record(4, NOW + 0.9)
    assert written.writes == [3]
    drain.record(1, NOW + 1.0)
    # Then the first was written at once, the rest together with the first batch a second later
    assert written.writes == [3, 7]
    assert reader.read("bulk", NOW + 1).drained == 10


def test_a_drain_count_whose_write_failed_goes_with_the_next_write(reader, counts):
    # Given a write that fails
    written = _FailingOnce(counts)
    drain = LaneDrain(written, "bulk")
    written.fail_next = True
    with pytest.raises(RuntimeError):
        drain.record(5, NOW)
    # When the next batch finishes
    drain.record(2, NOW + 0.1)
    # Then its write carries both counts: nothing was lost
    assert written.writes == [7]
    assert reader.read("bulk", NOW + 0.1).drained == 7
