"""Admission through the handler: a lane that cannot start new work within its objective sheds
it with 503 and an honest Retry-After, from lane state read at most about once a second."""

from __future__ import annotations

import math

import boto3

from pipeline.adapters.state_table import LaneCounts
from pipeline.domain.jobs import admission
from tests.support.aws import REGION
from tests.unit.jobs.conftest import NOW, body_of, job, submit

# The local environment's bulk lane: objective 60 s; 2 consumers x batch of 5 = 10 messages in
# flight when saturated.


def test_a_backlog_over_the_objective_is_shed_with_retry_after_the_drain_time(api, inspect, deployed, metrics):
    # Given a saturated bulk lane (10 in flight) with 7 more waiting, whose consumers finished one
    # message in six of the window's buckets: 6 per 60 s, so the 7 waiting take 70 s > 60 s
    inspect.fill("bulk", 17)
    sqs = boto3.client("sqs", region_name=REGION)
    sqs.receive_message(QueueUrl=deployed.resources.queue_urls["bulk"], MaxNumberOfMessages=10, VisibilityTimeout=300)
    counts = LaneCounts(boto3.client("dynamodb", region_name=REGION), "state")
    starts, window = admission.drain_window(NOW)
    for start in starts[1:]:
        counts.record_drained("bulk", 1, start)

    # When a job is submitted to it
    response = api(submit(job()), None)

    # Then it is shed with 503 and told to come back when the backlog will have drained
    assert response["statusCode"] == 503
    assert response["headers"]["retry-after"] == str(math.ceil(7 / (len(starts[1:]) / window))) == "70"
    assert "bulk" in body_of(response)["message"]
    assert inspect.job_rows() == []
    assert inspect.queued("bulk", "acme") == 0
    assert ("JobShed", {"Lane": "bulk"}) in metrics()


def test_a_backlog_within_the_objective_is_admitted(api, inspect):
    inspect.fill("bulk", 6)  # 60 s: exactly the objective

    assert api(submit(job()), None)["statusCode"] == 202


def test_other_lanes_are_not_shed_for_one_lanes_backlog(api, inspect):
    inspect.fill("bulk", 50)

    assert api(submit(job(lane="ai")), None)["statusCode"] == 202


def test_lane_state_is_read_once_and_reused_for_about_a_second(api, inspect, aws_calls, clock):
    # Given a first job has read the bulk lane's state
    api(submit(job()), None)
    reads = [c for c in aws_calls.calls if c in ("sqs.GetQueueAttributes", "dynamodb.BatchGetItem")]
    assert reads == ["sqs.GetQueueAttributes", "dynamodb.BatchGetItem"]
    aws_calls.reset()

    # When more jobs arrive within the second, the backlog having grown meanwhile
    inspect.fill("bulk", 50)
    clock.advance(0.5)
    still_admitted = api(submit(job()), None)

    # Then admission costs no AWS call: the hot path is the write and the send
    assert still_admitted["statusCode"] == 202
    assert aws_calls.calls == ["dynamodb.TransactWriteItems", "sqs.SendMessage"]

    # And once the snapshot is a second old, the lane is read again and the backlog seen
    clock.advance(0.5)
    assert api(submit(job()), None)["statusCode"] == 503


def test_a_measured_drain_rate_admits_what_the_configured_capacity_would_shed(api, inspect, deployed, clock):
    # Given a saturated bulk lane (10 in flight) with 7 more waiting, which consumers have been
    # draining at 6 a second for the last minute
    inspect.fill("bulk", 17)
    sqs = boto3.client("sqs", region_name=REGION)
    sqs.receive_message(QueueUrl=deployed.resources.queue_urls["bulk"], MaxNumberOfMessages=10, VisibilityTimeout=300)
    counts = LaneCounts(boto3.client("dynamodb", region_name=REGION), "state")
    for seconds_ago in range(0, 61, 10):
        counts.record_drained("bulk", 60, NOW - seconds_ago)

    # When a job is submitted
    response = api(submit(job()), None)

    # Then the measured rate (not the configured 0.1/s) predicts the wait, and it is admitted
    assert response["statusCode"] == 202


def test_a_saturated_lane_that_drains_nothing_is_shed_for_the_longest_retry(api, inspect, deployed):
    # Given a saturated bulk lane whose consumers have finished nothing in the window
    inspect.fill("bulk", 17)
    sqs = boto3.client("sqs", region_name=REGION)
    sqs.receive_message(QueueUrl=deployed.resources.queue_urls["bulk"], MaxNumberOfMessages=10, VisibilityTimeout=300)
    starts, _ = admission.drain_window(NOW)
    bucket = admission.drain_key("bulk", starts[-1])  # a minute ago, and nothing since
    boto3.client("dynamodb", region_name=REGION).put_item(
        TableName="state", Item={"pk": {"S": bucket}, admission.DRAINED: {"N": "0"}}
    )

    # When a job is submitted
    response = api(submit(job()), None)

    # Then its wait is unbounded: shed, told to come back at the longest interval
    assert response["statusCode"] == 503
    assert response["headers"]["retry-after"] == str(admission.MAX_RETRY_AFTER_SECONDS)


def test_unreadable_lane_state_admits_rather_than_refusing_everything(api, aws_calls, inspect):
    aws_calls.fail("sqs.GetQueueAttributes")
    inspect.fill("bulk", 50)

    assert api(submit(job()), None)["statusCode"] == 202
