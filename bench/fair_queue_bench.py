"""What a receive costs on the emulated fair queue (local_aws/message_index.py), by queue shape.

    .venv/bin/python -m bench.fair_queue_bench [--receives 2000]

Each case fills one queue's index with moto's own message objects spread over the groups
(round-robin, so every group has a backlog), with one more group noisy (30 in flight) where there
is more than one, then measures ReceiveMessage's work in the index: `take` of 10 messages
with a visibility timeout, the messages deleted and as many new ones sent after each, outside
the timing, so the queue keeps its size. The API layer (boto3, moto's parsing) is left out: it
costs the same whatever the queue holds.

It prints figures and asserts nothing about time: figures vary with the machine.
"""

from __future__ import annotations

import argparse
import itertools
import time
import uuid
from typing import Any

from moto.sqs.models import Message

from local_aws import moto_sqs
from local_aws.message_index import MessageIndex

RETENTION_MS = 4 * 24 * 3600 * 1000.0
CASES = (
    ("1 group, 10,000 messages", 1, 10_000),
    ("1,000 groups, 10,000 messages", 1_000, 10_000),
    ("100 groups, 1,000 messages", 100, 1_000),
    ("100 groups, 100,000 messages", 100, 100_000),
)


def _message(group: str) -> Any:
    message = Message(str(uuid.uuid4()), "x")
    message.mark_sent()
    message.group_id = group
    return message


def _take(index: MessageIndex, count: int) -> list[Any]:
    taken, _ = index.take(
        count, time.time() * 1000, visibility_timeout=30, max_receives=None, retention_ms=RETENTION_MS
    )
    return taken


def measure(groups: int, messages: int, receives: int) -> float:
    """Microseconds per receive of 10."""
    index = MessageIndex()
    if groups > 1:
        for _ in range(30):
            index.add(_message("noisy"), time.time() * 1000)
        while len(_take(index, 10)) == 10:
            pass
    names = itertools.cycle([f"tenant-{n}" for n in range(groups)])
    for _ in range(messages):
        index.add(_message(next(names)), time.time() * 1000)
    spent = 0.0
    for _ in range(receives):
        started = time.perf_counter()
        taken = _take(index, 10)
        spent += time.perf_counter() - started
        for message in taken:
            index.delete(message.receipt_handle, time.time() * 1000)
            index.add(_message(next(names)), time.time() * 1000)
    return spent / receives * 1e6


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.fair_queue_bench", description=__doc__.split("\n")[0])
    parser.add_argument("--receives", type=int, default=2000)
    args = parser.parse_args(argv)
    moto_sqs.install()  # as the runtime runs it (moto's receipt handles cost more than the index)
    print(f"receive of 10 on the emulated fair queue, mean over {args.receives} receives")
    for label, groups, messages in CASES:
        print(f"  {label:<32} {measure(groups, messages, args.receives):8.1f} µs per receive", flush=True)


if __name__ == "__main__":
    main()
