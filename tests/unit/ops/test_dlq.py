"""`dlq list` and `dlq peek`: depth, age and reasons, and every message left where it was."""

from __future__ import annotations

import json
from datetime import UTC, datetime

from .support import envelope, park, redrive_by_sqs, visible


def test_list_when_every_dlq_is_empty(dev_stack, lanectl):
    result = lanectl("dlq", "list", "--env", "dev")

    assert result.code == 0
    lines = result.out.splitlines()
    assert lines[0].startswith("dead-letter queues of lanes-dev")
    assert lines[1].split() == ["LANE", "DEPTH", "IN", "FLIGHT", "OLDEST", "AGE", "FROM"]
    assert [line.split()[0] for line in lines[2:7]] == ["messages", "engagement", "ai", "bulk", "scheduled"]
    assert all(line.split()[1:4] == ["0", "0", "-"] for line in lines[2:7])
    assert lines[-1] == "every dead-letter queue is empty"


def test_list_shows_depth_and_age_without_consuming(dev_stack, lanectl, clock):
    # Given two dead letters on messages and one on ai
    sqs = dev_stack.clients["sqs"]
    park(sqs, dev_stack.lane("messages").dlq_url, body=envelope("wh-1", "waba-1"), reason="unknown_kind")
    park(sqs, dev_stack.lane("messages").dlq_url, body=envelope("wh-2", "waba-2"), reason="unknown_kind")
    park(sqs, dev_stack.lane("ai").dlq_url, body=envelope("job-1", "acme", lane="ai"), reason="bad_payload")
    clock.now += 3 * 3600  # three hours later

    # When the operator lists the DLQs
    result = lanectl("dlq", "list", "--env", "dev")

    # Then each shows its depth and the age of its oldest message (from a peek: moto has no SQS metrics)
    assert result.code == 0
    rows = {line.split()[0]: line.split() for line in result.out.splitlines()[2:7]}
    assert rows["messages"][1:3] == ["2", "0"]
    assert rows["messages"][3].startswith("3h00m") or rows["messages"][3].startswith("2h59m")
    assert rows["messages"][4] == "peek"
    assert rows["ai"][1] == "1"
    assert rows["bulk"][1:4] == ["0", "0", "-"]
    assert "3 dead-lettered message(s) on messages, ai" in result.out
    # And nothing was taken: all three are visible again
    assert visible(sqs, dev_stack.lane("messages").dlq_url) == 2
    assert visible(sqs, dev_stack.lane("ai").dlq_url) == 1


def test_list_prefers_cloudwatch_age_when_sqs_reports_it(dev_stack, lanectl, clock):
    # Given a dead letter, and the age CloudWatch has for that DLQ (as SQS, or the local runtime, reports it)
    sqs, cloudwatch = dev_stack.clients["sqs"], dev_stack.clients["cloudwatch"]
    lane = dev_stack.lane("bulk")
    park(sqs, lane.dlq_url, body=envelope("job-9", "acme", lane="bulk"), reason="bad_payload")
    cloudwatch.put_metric_data(
        Namespace="AWS/SQS",
        MetricData=[
            {
                "MetricName": "ApproximateAgeOfOldestMessage",
                "Dimensions": [{"Name": "QueueName", "Value": lane.dlq_url.rsplit("/", 1)[-1]}],
                "Timestamp": datetime.fromtimestamp(clock.now - 30, UTC),
                "Value": 5400.0,
                "Unit": "Seconds",
            }
        ],
    )

    result = lanectl("dlq", "list", "--env", "dev")

    [bulk] = [line.split() for line in result.out.splitlines() if line.startswith("bulk")]
    assert bulk[3:] == ["1h30m", "cloudwatch"]


def test_peek_shows_reasons_and_puts_messages_back(dev_stack, lanectl):
    # Given one message the consumer dead-lettered (reason attached) and one SQS moved after max receives
    sqs = dev_stack.clients["sqs"]
    lane = dev_stack.lane("messages")
    park(
        sqs,
        lane.dlq_url,
        body=envelope("wh-perm", "waba-1"),
        reason="unknown_kind",
        error_class="permanent",
        error="no handler for kind 'reaction'",
        attempts="1",
        tenant="waba-1",
        lane="messages",
        id="wh-perm",
        kind="reaction",
    )
    redrive_by_sqs(sqs, lane.queue_url, 5, envelope("wh-poison", "waba-2"))
    assert visible(sqs, lane.dlq_url) == 2

    # When the operator peeks
    result = lanectl("dlq", "peek", "messages", "--env", "dev")

    # Then both are described, with what peek does stated
    assert result.code == 0
    out = result.out
    assert "messages dead-letter queue: 2 visible, 0 in flight; showing 2, oldest first" in out
    assert "makes it visible again at once" in out
    assert "nothing acts on" in out
    assert "wh-perm  tenant=waba-1  kind=reaction" in out
    assert "attempts=1" in out
    assert "reason: unknown_kind  error_class: permanent" in out
    assert "error: no handler for kind 'reaction'" in out
    assert "wh-poison  tenant=waba-2  kind=whatsapp_business_account" in out
    assert "attempts=5" in out  # the lane's deployed maxReceiveCount
    assert "reason: max receives exceeded  error_class: -" in out
    assert "(moved by SQS after 5 receives without success; no reason was attached)" in out
    # And both are visible at once afterwards, not held for the peek's visibility
    assert visible(sqs, lane.dlq_url) == 2


def test_peek_limits_to_n(dev_stack, lanectl):
    sqs = dev_stack.clients["sqs"]
    for n in range(3):
        park(
            sqs,
            dev_stack.lane("engagement").dlq_url,
            body=envelope(f"wh-{n}", "page-1", lane="engagement"),
            reason="unknown_kind",
        )

    result = lanectl("dlq", "peek", "engagement", "-n", "1", "--env", "dev")

    assert result.code == 0
    assert "showing 1" in result.out
    assert result.out.count("reason:") == 1


def test_peek_of_a_body_that_is_not_an_envelope(dev_stack, lanectl):
    park(dev_stack.clients["sqs"], dev_stack.lane("ai").dlq_url, body="<html>oops</html>", reason="malformed")

    result = lanectl("dlq", "peek", "ai", "--env", "dev")

    assert result.code == 0
    assert "body is not an envelope: '<html>oops</html>'" in result.out


def test_peek_empty_dlq_exits_4(dev_stack, lanectl):
    result = lanectl("dlq", "peek", "bulk", "--env", "dev")

    assert result.code == 4
    assert result.err == "lanectl: error: the bulk dead-letter queue is empty: nothing to peek\n"
    assert result.out == ""


def test_peek_unknown_lane_exits_2_naming_the_lanes(dev_stack, lanectl):
    result = lanectl("dlq", "peek", "mesages", "--env", "dev")

    assert result.code == 2
    assert "unknown lane 'mesages' in dev; lanes: messages, engagement, ai, bulk, scheduled" in result.err


def test_peek_count_out_of_range_exits_2(dev_stack, lanectl):
    result = lanectl("dlq", "peek", "messages", "-n", "0", "--env", "dev")

    assert result.code == 2
    assert "-n must be 1..100, got 0" in result.err


def test_list_as_json_for_scripts(dev_stack, lanectl, clock):
    # Given two dead letters on messages, sent an hour ago
    sqs = dev_stack.clients["sqs"]
    for n in (1, 2):
        park(sqs, dev_stack.lane("messages").dlq_url, body=envelope(f"wh-{n}", "waba-1"), reason="unknown_kind")
    clock.now += 3600

    # When a script lists the DLQs as JSON
    result = lanectl("dlq", "list", "--env", "dev", "--output", "json")

    # Then stdout is one document with every lane's depth and the oldest age in seconds
    assert result.code == 0
    listed = json.loads(result.out)
    assert listed["stack"] == "lanes-dev"
    assert listed["total"] == 2
    lanes = {lane["lane"]: lane for lane in listed["lanes"]}
    assert list(lanes) == ["messages", "engagement", "ai", "bulk", "scheduled"]
    assert (lanes["messages"]["visible"], lanes["messages"]["in_flight"], lanes["messages"]["age_from"]) == (
        2,
        0,
        "peek",
    )
    assert 3590 <= lanes["messages"]["oldest_age_seconds"] <= 3610
    assert (lanes["bulk"]["visible"], lanes["bulk"]["oldest_age_seconds"], lanes["bulk"]["age_from"]) == (0, None, None)
    # And nothing was taken
    assert visible(sqs, dev_stack.lane("messages").dlq_url) == 2


def test_peek_as_json_for_scripts(dev_stack, lanectl):
    # Given one message the consumer dead-lettered with its reason, and one body that is not an envelope
    sqs = dev_stack.clients["sqs"]
    lane = dev_stack.lane("ai")
    park(
        sqs,
        lane.dlq_url,
        body=envelope("job-7", "acme", lane="ai", kind="ai.inbound"),
        reason="bad_payload",
        error_class="permanent",
        attempts="1",
    )
    park(sqs, lane.dlq_url, body="<html>oops</html>", reason="malformed")

    # When a script peeks as JSON
    result = lanectl("dlq", "peek", "ai", "--env", "dev", "--output", "json")

    # Then each message is an object with the fields the text shows
    assert result.code == 0
    peeked = json.loads(result.out)
    assert (peeked["lane"], peeked["visible"], peeked["in_flight"]) == ("ai", 2, 0)
    by_reason = {m["reason"]: m for m in peeked["messages"]}
    job = by_reason["bad_payload"]
    assert (job["id"], job["tenant"], job["kind"], job["attempts"], job["error_class"]) == (
        "job-7",
        "acme",
        "ai.inbound",
        "1",
        "permanent",
    )
    assert job["envelope"] is True
    assert job["body_start"] is None
    assert by_reason["malformed"]["envelope"] is False
    assert by_reason["malformed"]["body_start"] == "<html>oops</html>"
    # And both are visible again
    assert visible(sqs, lane.dlq_url) == 2


def test_output_other_than_text_or_json_exits_2(dev_stack, lanectl):
    result = lanectl("dlq", "list", "--env", "dev", "--output", "yaml")

    assert result.code == 2
    assert "invalid choice: 'yaml'" in result.err
