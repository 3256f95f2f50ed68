"""The pipeline end to end, on the local runtime in its own process, through HTTP and the CLI."""

from __future__ import annotations

import time
import uuid

import pytest
import requests

from ops.drive import wait_for
from ops.drive.meta_payloads import CUSTOMER, whatsapp_message
from pipeline.adapters.sender_key import SenderKey
from pipeline.domain import senders

pytestmark = [pytest.mark.xdist_group("e2e"), pytest.mark.slow]


def _message_items(pipeline, tenant: str, wamid: str) -> list[dict]:
    """What the sender's partition holds about this message: the message, and a status if any."""
    sender = SenderKey(pipeline.aws("secretsmanager"), pipeline.outputs["SenderKeyArn"]).hash(CUSTOMER)
    items = pipeline.aws("dynamodb").query(
        TableName=pipeline.outputs["DataTableName"],
        KeyConditionExpression="pk = :pk",
        ExpressionAttributeValues={":pk": {"S": senders.person_partition(sender)}},
        ConsistentRead=True,
    )["Items"]
    return [i for i in items if i["sk"]["S"].endswith(f"#{tenant}#{wamid}")]


def _log_rows(pipeline) -> list[dict]:
    return pipeline.aws("dynamodb").scan(TableName=pipeline.outputs["WebhookTableName"])["Items"]


def test_the_verification_handshake_answers_the_challenge(pipeline):
    ok = pipeline.client.handshake(pipeline.verify_token, "challenge-123")
    assert (ok.status, ok.text) == (200, "challenge-123")
    assert pipeline.client.handshake("wrong-token", "challenge-123").status == 403


def test_a_signed_webhook_is_processed_exactly_once(pipeline):
    # Given a signed WhatsApp message, delivered, then redelivered byte for byte as Meta retries
    tenant, wamid = f"waba-{uuid.uuid4().hex[:8]}", f"wamid.{uuid.uuid4().hex}"
    payload = whatsapp_message(tenant, wamid, "is the shop open on Sunday? 👋")
    first = pipeline.client.deliver(payload)
    second = pipeline.client.deliver(payload)
    # Then both are acknowledged and the message is stored once
    assert (first.status, second.status) == (200, 200)
    items = wait_for(lambda: _message_items(pipeline, tenant, wamid), timeout=30, what="the message to be stored")
    assert [i["sk"]["S"] for i in items] == [f"msg#{tenant}#{wamid}"]
    assert items[0]["text"]["S"] == "is the shop open on Sunday? 👋"
    # And one log row exists, left as the door wrote it: the stored message is its done-mark,
    # and nothing put it where the sweeper looks for lost sends
    [row] = [r for r in _log_rows(pipeline) if r.get("tenant", {}).get("S") == tenant]
    assert row["status"]["S"] == "queued"
    assert "pending_shard" not in row


def test_a_bad_signature_is_refused_and_nothing_is_logged(pipeline):
    tenant = f"waba-{uuid.uuid4().hex[:8]}"
    payload = whatsapp_message(tenant, f"wamid.{uuid.uuid4().hex}", "hello")
    assert pipeline.client.deliver(payload, signature="sha256=" + "0" * 64).status == 403
    assert pipeline.client.deliver(payload, signature="").status == 401
    time.sleep(1)
    assert not [r for r in _log_rows(pipeline) if r.get("tenant", {}).get("S") == tenant]


def test_maximum_concurrency_is_never_exceeded(pipeline):
    # Given more AI turns than the ai lane's MaximumConcurrency (3) can run at once
    tenant = f"tenant-{uuid.uuid4().hex[:8]}"
    started = time.time()
    for n in range(12):
        response = pipeline.client.submit_job(
            lane="ai",
            kind="ai.inbound",
            tenant=tenant,
            payload={"conversation": f"c{n}", "message_id": f"m{n}", "text": f"question {n}?"},
        )
        assert response.status == 202, response.text
    # When they have all been answered
    cloudwatch = pipeline.aws("cloudwatch")
    function = pipeline.outputs["AiFunctionName"]

    def peak() -> float | None:
        stats = cloudwatch.get_metric_statistics(
            Namespace="AWS/Lambda",
            MetricName="ConcurrentExecutions",
            Dimensions=[{"Name": "FunctionName", "Value": function}],
            StartTime=started - 60,
            EndTime=time.time() + 60,
            Period=60,
            Statistics=["Maximum", "SampleCount"],
        )["Datapoints"]
        invocations = sum(d["SampleCount"] for d in stats)
        return max(d["Maximum"] for d in stats) if invocations >= 24 else None  # 12 stamps + 12 turns

    measured = wait_for(peak, timeout=90, interval=2, what="24 AI invocations to be measured")
    # Then the lane ran turns in parallel, and its measured peak never passed the mapping's budget
    assert 2 <= measured <= 3, measured


def _set_model(pipeline, **changes) -> None:
    """The local model's behaviour, through the emulator's settings endpoint (local_aws/moto_converse.py)."""
    response = requests.post(f"{pipeline.aws_endpoint}/moto-api/local/model", json=changes, timeout=5)
    assert response.status_code == 200, response.text


def _dlq_alarm_state(pipeline) -> str:
    alarms = pipeline.aws("cloudwatch").describe_alarms()["MetricAlarms"]
    (alarm,) = [a for a in alarms if "AiLaneDeadLetters" in a["AlarmName"]]
    return alarm["StateValue"]


def test_a_poison_message_is_dead_lettered_alarmed_and_redriven_once_fixed(pipeline):
    # Given a model that fails on one prompt every time (a 500 from Bedrock)
    _set_model(pipeline, rejects="POISON-E2E")
    tenant = f"shop-{uuid.uuid4().hex[:8]}"
    response = pipeline.client.submit_job(
        lane="ai",
        kind="ai.inbound",
        tenant=tenant,
        payload={"conversation": "c-poison", "message_id": "m-poison", "text": "order POISON-E2E late"},
    )
    assert response.status == 202
    sqs = pipeline.aws("sqs")

    def dead_letters() -> int:
        attributes = sqs.get_queue_attributes(QueueUrl=pipeline.outputs["AiDlqUrl"], AttributeNames=["All"])
        return int(attributes["Attributes"]["ApproximateNumberOfMessages"])

    # When it has been retried up to the lane's max receives
    assert wait_for(dead_letters, timeout=90, interval=1, what="the poison turn in the DLQ") == 1
    # Then the DLQ alarm fires
    wait_for(lambda: _dlq_alarm_state(pipeline) == "ALARM", timeout=30, interval=1, what="the DLQ alarm")

    # When the model is fixed and on-call redrives the DLQ with the CLI
    _set_model(pipeline, rejects="")
    redrive = pipeline.lanectl(
        "--env", "local", "--endpoint-url", pipeline.aws_endpoint, "dlq", "redrive", "ai", "--rate", "5"
    )
    assert redrive.returncode == 0, redrive.stdout + redrive.stderr
    assert "moved 1 message(s)" in redrive.stdout
    assert dead_letters() == 0

    # Then the turn is answered exactly once, and the alarm clears
    def replies() -> list[dict]:
        return [
            i
            for i in pipeline.aws("dynamodb").query(
                TableName=pipeline.outputs["DataTableName"],
                KeyConditionExpression="pk = :pk",
                ExpressionAttributeValues={":pk": {"S": f"conversation#{tenant}#c-poison"}},
            )["Items"]
            if i["sk"]["S"].startswith("reply#")
        ]

    wait_for(replies, timeout=60, interval=1, what="the reply after the redrive")
    time.sleep(3)
    assert len(replies()) == 1
    wait_for(lambda: _dlq_alarm_state(pipeline) == "OK", timeout=30, interval=1, what="the DLQ alarm to clear")
