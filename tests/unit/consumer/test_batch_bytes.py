"""Re-sends go out in SendMessageBatch calls sized by bytes as well as by count: ten jobs carrying
their payloads inline are more than one batch's payload limit, and deferring them loses nothing."""

from __future__ import annotations

from typing import Any

from pipeline.adapters.lane_queue import QueueSender
from pipeline.domain.envelope import INLINE_PAYLOAD_LIMIT, Envelope, Outgoing
from pipeline.domain.errors import DependencyBusy

BATCH_BYTES = 256 * 1024
"""SQS's limit on one SendMessageBatch's payload: every entry's body and attributes together."""
PAYLOAD_BYTES = 150 * 1024
"""Under the jobs API's inline limit: ten of them are 1.5 MB, past any SQS batch's payload."""


def busy(ctx: Any) -> Any:
    raise DependencyBusy("vendor at its limit")


def _entry_bytes(entry: dict[str, Any]) -> int:
    size = len(entry["MessageBody"].encode())
    for name, attribute in (entry.get("MessageAttributes") or {}).items():
        size += len(name.encode()) + len(attribute["DataType"].encode()) + len(attribute["StringValue"].encode())
    return size


def test_ten_large_jobs_deferred_at_once_are_all_re_sent(lane):
    # Given a batch of ten jobs, each with a 150 KB payload inline, whose task finds its budget busy
    assert PAYLOAD_BYTES < INLINE_PAYLOAD_LIMIT
    h = lane("messages")
    for n in range(10):
        h.send(h.job_row(f"job-{n}", {"blob": "x" * PAYLOAD_BYTES}, tenant="acme", kind="test"))
    response, messages = h.poll(h.handler(tasks={"messages": busy}))
    # When the consumer defers them all
    assert len(messages) == 10
    # Then every one is re-sent and acked, none failed back, in calls no larger than a batch may be
    assert response == {"batchItemFailures": []}
    assert h.depth() == 10
    calls = h.calls.of("SendMessageBatch")
    assert all(len(c["Entries"]) <= 10 and sum(map(_entry_bytes, c["Entries"])) <= BATCH_BYTES for c in calls)


class _Sqs:
    def __init__(self, refuse: set[str]) -> None:
        self.calls: list[list[dict[str, Any]]] = []
        self._refuse = refuse

    def send_message_batch(self, QueueUrl: str, Entries: list[dict[str, Any]]) -> dict[str, Any]:
        self.calls.append(Entries)
        failed = [
            {"Id": e["Id"], "Code": "Refused", "Message": "test"}
            for e in Entries
            if Envelope.from_json(e["MessageBody"]).id in self._refuse
        ]
        return {"Failed": failed, "Successful": []}


def test_a_batch_is_cut_by_bytes_and_count_and_refusals_name_the_right_envelopes():
    def outgoing(n: int, size: int) -> Outgoing:
        envelope = Envelope(
            id=f"e{n}", lane="messages", tenant="acme", kind="test", source="job", created_at=1.0, payload="x" * size
        )
        return Outgoing(envelope, attributes={"reason": "r"})

    sqs = _Sqs(refuse={"e4", "e11"})
    messages = [outgoing(n, 100 * 1024) for n in range(6)] + [outgoing(n, 10) for n in range(6, 20)]
    refused = QueueSender(sqs).send_batch("url", messages)
    sent = [Envelope.from_json(e["MessageBody"]).id for call in sqs.calls for e in call]
    assert sent == [f"e{n}" for n in range(20)]  # all of them, in order, once
    assert all(len(call) <= 10 and sum(map(_entry_bytes, call)) <= BATCH_BYTES for call in sqs.calls)
    assert sorted(failure.envelope.id for failure in refused) == ["e11", "e4"]
