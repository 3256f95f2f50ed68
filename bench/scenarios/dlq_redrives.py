"""The two ways scenario 9 puts dead letters back: `lanectl dlq redrive --rate` as an operator runs
it, and the unpaced loop a hurried script is (receive, send, delete, as fast as the queues allow)."""

from __future__ import annotations

from typing import Any

from bench.scenarios.harness import calm
from ops.drive import Session


def unpaced_redrive(s: Session, lane: str) -> str:
    """Receive, send, delete, as fast as the queues allow."""
    sqs = s.aws("sqs")
    dlq, queue = s.queue_url(lane, dlq=True), s.queue_url(lane)
    moved = 0
    while True:
        batch = calm(
            sqs.receive_message,
            QueueUrl=dlq,
            MaxNumberOfMessages=10,
            WaitTimeSeconds=0,
            VisibilityTimeout=60,
            MessageAttributeNames=["All"],
            MessageSystemAttributeNames=["All"],
        ).get("Messages", [])
        if not batch:
            return f"moved {moved}"
        entries: list[dict[str, Any]] = []
        for i, m in enumerate(batch):
            entry: dict[str, Any] = {"Id": str(i), "MessageBody": m["Body"]}
            if m.get("MessageAttributes"):
                entry["MessageAttributes"] = m["MessageAttributes"]
            entries.append(entry)
        calm(sqs.send_message_batch, QueueUrl=queue, Entries=entries)
        calm(
            sqs.delete_message_batch,
            QueueUrl=dlq,
            Entries=[{"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(batch)],
        )
        moved += len(batch)


def lanectl_redrive(s: Session, lane: str, rate: int) -> str:
    done = s.lanectl("dlq", "redrive", lane, "--rate", str(rate), timeout=600)
    if done.returncode != 0:
        raise RuntimeError(f"lanectl failed ({done.returncode}): {done.stdout[-500:]} {done.stderr[-500:]}")
    return done.stdout.strip().splitlines()[-1] if done.stdout.strip() else ""
