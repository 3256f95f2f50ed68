"""`dlq redrive`: paced, refusing to race a running move task, and never dropping a message."""

from __future__ import annotations

import json

import boto3
from botocore.exceptions import ClientError
from botocore.stub import Stubber

from ops.commands.redrive import _unsupported
from tests.support.aws import REGION

from .support import StubbedAws, envelope, park, receive_all, visible


def _park_three(stack, lane="messages"):
    sqs = stack.clients["sqs"]
    for n, tenant in enumerate(("waba-1", "waba-2", "waba-1")):
        park(
            sqs,
            stack.lane(lane).dlq_url,
            body=envelope(f"wh-{n}", tenant),
            reason="vendor_down",
            error_class="transient",
            attempts="6",
            tenant=tenant,
        )


def test_paced_move_where_the_backend_has_no_move_task(dev_stack, lanectl):
    # Given three dead letters, on a backend without StartMessageMoveTask (moto)
    _park_three(dev_stack)
    lane = dev_stack.lane("messages")

    # When the operator redrives them
    result = lanectl("dlq", "redrive", "messages", "--env", "dev")

    # Then they are back on the lane, unchanged, and the DLQ is empty
    assert result.code == 0, result.err
    assert "by paced move (this backend has no StartMessageMoveTask)" in result.out
    assert "moved 3 of 3 (100%)" in result.out
    assert "done: moved 3 message(s) back to the messages queue; 0 left in the dead-letter queue" in result.out
    sqs = dev_stack.clients["sqs"]
    assert visible(sqs, lane.dlq_url) == 0
    moved = sorted(receive_all(sqs, lane.queue_url), key=lambda m: json.loads(m["Body"])["id"])
    assert [json.loads(m["Body"])["id"] for m in moved] == ["wh-0", "wh-1", "wh-2"]
    assert moved[1]["MessageAttributes"]["reason"]["StringValue"] == "vendor_down"
    assert moved[1]["Attributes"]["MessageGroupId"] == "waba-2"


def test_paced_move_keeps_to_the_rate(dev_stack, lanectl, clock):
    # Given six dead letters and a rate of two a second
    sqs = dev_stack.clients["sqs"]
    for n in range(6):
        park(sqs, dev_stack.lane("ai").dlq_url, body=envelope(f"job-{n}", "acme", lane="ai"), reason="x")

    result = lanectl("dlq", "redrive", "ai", "--rate", "2", "--env", "dev")

    # Then it sends two at once and waits a second between pairs: three seconds' worth for six
    assert result.code == 0, result.err
    assert sum(clock.sleeps) == 2.0
    assert "moved 6 message(s)" in result.out


def test_tenant_filter_moves_only_that_tenant(dev_stack, lanectl):
    _park_three(dev_stack)
    lane = dev_stack.lane("messages")

    result = lanectl("dlq", "redrive", "messages", "--tenant", "waba-1", "--env", "dev")

    assert result.code == 0, result.err
    assert "by paced move (a move task cannot filter by tenant)" in result.out
    assert "moved 2 message(s) back to the messages queue (tenant waba-1; 1 of other tenants left in place)" in (
        result.out
    )
    sqs = dev_stack.clients["sqs"]
    assert {json.loads(m["Body"])["tenant"] for m in receive_all(sqs, lane.queue_url)} == {"waba-1"}
    # And the other tenant's message is visible in the DLQ straight away, not held
    assert visible(sqs, lane.dlq_url) == 1


def test_dry_run_moves_nothing_and_says_what_would(dev_stack, lanectl):
    _park_three(dev_stack)
    lane = dev_stack.lane("messages")

    result = lanectl("dlq", "redrive", "messages", "--dry-run", "--rate", "1", "--env", "dev")

    assert result.code == 0
    assert result.out.splitlines() == [
        "dry run: nothing will be moved",
        "  from: messages dead-letter queue (3 visible, 0 in flight)",
        "  to:   messages queue",
        "  how:  paced move (this backend has no StartMessageMoveTask), at most 1 msg/s",
        "  would move 3 message(s), taking about 3s",
        "  by reason (all visible messages): vendor_down 3",
        "  by tenant (all visible messages): waba-1 2, waba-2 1",
    ]
    sqs = dev_stack.clients["sqs"]
    assert visible(sqs, lane.dlq_url) == 3
    assert visible(sqs, lane.queue_url) == 0


def test_dry_run_with_a_tenant_counts_that_tenant(dev_stack, lanectl):
    _park_three(dev_stack)

    result = lanectl("dlq", "redrive", "messages", "--dry-run", "--tenant", "waba-2", "--env", "dev")

    assert "  only: tenant waba-2: 1 message(s) (all visible messages)" in result.out
    assert "  would move 1 message(s)" in result.out


def test_redrive_of_an_empty_dlq_exits_4(dev_stack, lanectl):
    result = lanectl("dlq", "redrive", "bulk", "--env", "dev")

    assert result.code == 4
    assert "the bulk dead-letter queue is empty: nothing to redrive" in result.err


def test_rate_over_the_move_task_ceiling_exits_2(dev_stack, lanectl):
    result = lanectl("dlq", "redrive", "messages", "--rate", "501", "--env", "dev")

    assert result.code == 2
    assert "--rate must be 1..500, got 501" in result.err


def test_a_lane_queue_that_refuses_loses_nothing(dev_stack, lanectl):
    # Given dead letters whose lane queue has gone (deleted by hand, say)
    _park_three(dev_stack)
    lane = dev_stack.lane("messages")
    sqs = dev_stack.clients["sqs"]
    sqs.delete_queue(QueueUrl=lane.queue_url)

    result = lanectl("dlq", "redrive", "messages", "--env", "dev")

    # Then the redrive stops with the reason, and every message is still in the DLQ, visible
    assert result.code == 3
    assert "AWS refused SendMessageBatch" in result.err
    assert visible(sqs, lane.dlq_url) == 3


def _with(sqs):
    return lambda target: StubbedAws(target, {"sqs": sqs})


def _stubbed(dev_stack, lane_name, depth=3):
    sqs = boto3.client("sqs", region_name=REGION)
    stubber = Stubber(sqs)
    lane = dev_stack.lane(lane_name)
    stubber.add_response(
        "get_queue_attributes",
        {
            "Attributes": {
                "ApproximateNumberOfMessages": str(depth),
                "ApproximateNumberOfMessagesNotVisible": "0",
                "ApproximateNumberOfMessagesDelayed": "0",
            }
        },
        {
            "QueueUrl": lane.dlq_url,
            "AttributeNames": [
                "ApproximateNumberOfMessages",
                "ApproximateNumberOfMessagesNotVisible",
                "ApproximateNumberOfMessagesDelayed",
            ],
        },
    )
    return sqs, stubber, lane


def _task(status, moved, handle=None, **extra):
    task = {
        "Status": status,
        "SourceArn": "arn",
        "ApproximateNumberOfMessagesMoved": moved,
        "ApproximateNumberOfMessagesToMove": 3,
        "StartedTimestamp": 4_000_000_000_000,
        **extra,
    }
    if handle:
        task["TaskHandle"] = handle
    return task


def test_move_task_on_aws_with_progress(dev_stack, lanectl):
    sqs, stubber, lane = _stubbed(dev_stack, "messages")
    stubber.add_response("list_message_move_tasks", {"Results": []}, {"SourceArn": lane.dlq_arn, "MaxResults": 10})
    stubber.add_response(
        "start_message_move_task",
        {"TaskHandle": "h-1"},
        {"SourceArn": lane.dlq_arn, "DestinationArn": lane.queue_arn, "MaxNumberOfMessagesPerSecond": 25},
    )
    stubber.add_response(
        "list_message_move_tasks",
        {"Results": [_task("RUNNING", 1, "h-1")]},
        {"SourceArn": lane.dlq_arn, "MaxResults": 10},
    )
    stubber.add_response(
        "list_message_move_tasks", {"Results": [_task("COMPLETED", 3)]}, {"SourceArn": lane.dlq_arn, "MaxResults": 10}
    )

    with stubber:
        result = lanectl("dlq", "redrive", "messages", "--rate", "25", "--env", "dev", aws=_with(sqs))

    assert result.code == 0, result.err
    assert "at 25 msg/s by message move task (StartMessageMoveTask)" in result.out
    assert "  moved 1 of 3 (33%)" in result.out
    assert "  moved 3 of 3 (100%)" in result.out
    assert "done: moved 3 message(s) back to the messages queue" in result.out
    stubber.assert_no_pending_responses()


def test_refuses_while_a_move_task_is_running(dev_stack, lanectl):
    sqs, stubber, lane = _stubbed(dev_stack, "messages")
    stubber.add_response(
        "list_message_move_tasks",
        {"Results": [_task("RUNNING", 40, "h-other")]},
        {"SourceArn": lane.dlq_arn, "MaxResults": 10},
    )

    with stubber:
        result = lanectl("dlq", "redrive", "messages", "--env", "dev", aws=_with(sqs))

    assert result.code == 5
    assert "a message move task is already running from the messages dead-letter queue (40 of 3 moved)" in result.err
    assert "aws sqs cancel-message-move-task --task-handle h-other" in result.err


def test_a_failed_move_task_exits_1_with_its_reason(dev_stack, lanectl):
    sqs, stubber, lane = _stubbed(dev_stack, "messages")
    stubber.add_response("list_message_move_tasks", {"Results": []}, {"SourceArn": lane.dlq_arn, "MaxResults": 10})
    stubber.add_response("start_message_move_task", {"TaskHandle": "h-2"}, None)
    stubber.add_response(
        "list_message_move_tasks",
        {"Results": [_task("FAILED", 1, FailureReason="AccessDenied on the destination")]},
        None,
    )

    with stubber:
        result = lanectl("dlq", "redrive", "messages", "--env", "dev", aws=_with(sqs))

    assert result.code == 1
    assert "the move task failed after moving 1: AccessDenied on the destination" in result.err


def test_ctrl_c_cancels_the_move_task(dev_stack, lanectl, clock):
    sqs, stubber, _ = _stubbed(dev_stack, "messages")
    stubber.add_response("list_message_move_tasks", {"Results": []}, None)
    stubber.add_response("start_message_move_task", {"TaskHandle": "h-3"}, None)
    stubber.add_response("cancel_message_move_task", {"ApproximateNumberOfMessagesMoved": 0}, {"TaskHandle": "h-3"})

    def interrupt(_count):
        raise KeyboardInterrupt

    clock.on_sleep = interrupt
    with stubber:
        result = lanectl("dlq", "redrive", "messages", "--env", "dev", aws=_with(sqs))

    assert result.code == 130
    assert "interrupted: cancelled the move task" in result.out
    stubber.assert_no_pending_responses()


def test_what_counts_as_a_backend_without_move_tasks():
    def error(code):
        return ClientError({"Error": {"Code": code, "Message": ""}}, "ListMessageMoveTasks")

    assert _unsupported(NotImplementedError("moto in-process"))
    assert _unsupported(error("500"))  # moto server: HTTP 500 with no AWS error code
    assert _unsupported(error("InvalidAction"))
    assert not _unsupported(error("AccessDenied"))
    assert not _unsupported(error("InternalError"))


def test_ctrl_c_in_a_paced_move_keeps_what_moved_and_releases_the_rest(dev_stack, lanectl, clock):
    # Given three dead letters moved one a second, and Ctrl-C while waiting to send the second
    _park_three(dev_stack)
    lane = dev_stack.lane("messages")

    def interrupt(_count):
        raise KeyboardInterrupt

    clock.on_sleep = interrupt
    result = lanectl("dlq", "redrive", "messages", "--rate", "1", "--env", "dev")

    # Then one moved, and the two left are visible in the DLQ at once (not hidden for a minute)
    assert result.code == 130
    assert "interrupted: moved 1 message(s) back to the messages queue; 2 left in the dead-letter queue" in result.out
    sqs = dev_stack.clients["sqs"]
    assert visible(sqs, lane.queue_url) == 1
    assert visible(sqs, lane.dlq_url) == 2
