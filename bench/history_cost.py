"""What a webhook costs the local runtime as history grows: 1,000 against 50,000 stored items in one
person's partition, and in one tenant.

    python -m bench.history_cost              # both places, 1,000 and 50,000, alternating, twice
    python -m bench.history_cost --quick      # once each, 200 webhooks a run

Each run is a fresh runtime (ops/drive) whose data table is first given the history through the
emulator's DynamoDB API: items shaped as the messages lane stores them, each kept for the
environment's retention, either all in one customer's partition (that customer then writes to
the same business), or one each from as many customers of one business (a new customer then
writes to it). Then webhooks are sent at a steady rate, every one is waited for until stored,
and the run prints, per webhook: the process's CPU time (door, consumer, emulator, background
threads, and the sender, the same in every run), the AWS calls the functions made and the
DynamoDB write calls among them (the grant ledger, local_aws/iam/ledger.py). Flat means the
figures at 50,000 are those at 1,000 within the machine's noise.
"""

from __future__ import annotations

import argparse
import gc
import time
import uuid
from collections import Counter
from typing import Any

from ops.drive import meta_payloads

PERSON, TENANT = "person", "tenant"
TENANT_ID = "waba-history-000"
CUSTOMER = "447700900077"
WRITE_ACTIONS = frozenset(
    f"dynamodb:{a}" for a in ("PutItem", "UpdateItem", "DeleteItem", "TransactWriteItems", "BatchWriteItem")
)
SEED_BATCH = 25


def seed(session: Any, where: str, count: int) -> float:
    """`count` stored messages in one person's partition or one tenant; seconds it took."""
    from pipeline.adapters.items import to_item
    from pipeline.domain import senders, stored_text
    from pipeline.tasks.messages import message_key

    started = time.monotonic()
    dynamodb = session.aws("dynamodb")
    table = session.outputs["DataTableName"]
    now = time.time()
    expires = int(now + 30 * 86_400)
    one = session.person_hash(CUSTOMER)
    batch: list[dict[str, Any]] = []
    for n in range(count):
        person = one if where == PERSON else senders.sender_hash(b"h" * 32, f"4477{n:08d}")
        item = {
            **message_key(TENANT_ID, f"wamid.seed.{n}", person),
            "channel": "whatsapp",
            "sender": CUSTOMER,
            "type": "text",
            "text": stored_text.stored("where is my order, please"),
            "sent_at": int(now),
            "stored_at": now,
            "expires_at": expires,
        }
        batch.append({"PutRequest": {"Item": to_item(item)}})
        if len(batch) == SEED_BATCH or n == count - 1:
            request = {table: batch}
            while request:
                request = dynamodb.batch_write_item(RequestItems=request).get("UnprocessedItems") or {}
            batch = []
    return time.monotonic() - started


def send(session: Any, where: str, webhooks: int, rate: float) -> list[tuple[str, str]]:
    """Deliver `webhooks` at `rate` a second; (message id, sender) of each accepted."""
    run = uuid.uuid4().hex[:6]
    accepted = []
    origin = time.monotonic()
    for n in range(webhooks):
        wait = n / rate - (time.monotonic() - origin)
        if wait > 0:
            time.sleep(wait)
        sender = CUSTOMER if where == PERSON else f"4478{run[:2]}{n:06d}"
        wamid = f"wamid.history.{run}.{n}"
        if (
            session.client.deliver(meta_payloads.whatsapp_message(TENANT_ID, wamid, "is it shipped?", sender)).status
            == 200
        ):
            accepted.append((wamid, sender))
    return accepted


def wait_stored(session: Any, sent: list[tuple[str, str]], timeout: float = 120.0) -> int:
    """How many of `sent` were never stored within `timeout`."""
    deadline = time.monotonic() + timeout
    missing = list(sent)
    while missing and time.monotonic() < deadline:
        missing = [(w, s) for w, s in missing if session.stored_message(TENANT_ID, w, s) is None]
        if missing:
            time.sleep(0.5)
    return len(missing)


def measure(harness: Any, where: str, history: int, webhooks: int, rate: float) -> dict[str, Any]:
    from local_aws.iam import ledger

    with harness.session() as session:
        seeded = seed(session, where, history)
        # The runtime freezes what survives a collection every 20 s (local_aws/background.py): done
        # now, so the seeded items are not walked by the first collections of the measured run.
        gc.collect()
        gc.freeze()
        wait_stored(session, send(session, where, 20, rate))  # warm instances, not counted
        calls_before = ledger.used()
        cpu_before = time.process_time()
        sent = send(session, where, webhooks, rate)
        lost = wait_stored(session, sent)
        session.settle()
        cpu = time.process_time() - cpu_before
        used = ledger.used()
        used.subtract(calls_before)
    calls = Counter({use: n for use, n in used.items() if n > 0})
    accepted = max(1, len(sent))
    return {
        "where": where,
        "history": history,
        "seed_s": round(seeded, 1),
        "webhooks": len(sent),
        "not_stored": lost,
        "cpu_ms": round(cpu * 1000 / accepted, 2),
        "calls": round(sum(calls.values()) / accepted, 2),
        "writes": round(sum(n for (_, action, _), n in calls.items() if action in WRITE_ACTIONS) / accepted, 2),
    }


def main(argv: list[str] | None = None) -> int:
    from bench.scenarios.harness import Harness

    parser = argparse.ArgumentParser(prog="python -m bench.history_cost", description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="one round of 200 webhooks a run")
    parser.add_argument("--rate", type=float, default=25.0, help="webhooks a second (25)")
    parser.add_argument("--sizes", default="1000,50000", help="stored items before the run (1000,50000)")
    parser.add_argument("--places", default="person,tenant", help="where the history is (person,tenant)")
    args = parser.parse_args(argv)
    rounds, webhooks = (1, 200) if args.quick else (2, 500)
    sizes = [int(s) for s in args.sizes.split(",")]
    places = [p for p in args.places.split(",") if p in (PERSON, TENANT)]
    harness = Harness()
    rows = []
    print("where   history  seeded s  webhooks  not stored  CPU ms/webhook  AWS calls/webhook  write calls/webhook")
    try:
        for _ in range(rounds):
            for where in places:
                for history in sizes:
                    row = measure(harness, where, history, webhooks, args.rate)
                    rows.append(row)
                    print(
                        f"{row['where']:7} {row['history']:8} {row['seed_s']:9} {row['webhooks']:9} "
                        f"{row['not_stored']:11} {row['cpu_ms']:15} {row['calls']:18} {row['writes']:15}",
                        flush=True,
                    )
    finally:
        harness.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
