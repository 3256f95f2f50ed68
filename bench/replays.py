"""A replay after a fix on the local runtime: the rate asked and achieved, the effects re-run, what
the second identical replay changed, and the consumer's write units per replayed delivery.

`python -m bench.replays [DELIVERIES] [RATE]` (200 and 50 by default). The runtime is the one
`make demo` runs (ops/drive). N WhatsApp texts of one tenant are delivered and stored; their stored
texts are then overwritten, as a faulty release would have left them; `lanectl replay` sends the
tenant's window as generation 1 at RATE, and again, identically. The consumer's DynamoDB requests
are metered as the cost scenario meters them (bench/scenarios/metering.py: write units from the
item images, a failed condition still charged, index entries counted).

Printed: the rate asked and the rate lanectl reports achieving (paced sends over the time the pace
allowed them); effects re-run (items restored and at generation 1, of N); items the second replay
changed; write units per replayed delivery for each replay (the second's are its failed
conditions: DynamoDB charges a write that fails its condition).
"""

from __future__ import annotations

import re
import sys
import threading
import time
import uuid
from collections.abc import Mapping
from typing import Any

GARBLED = "garbled by the faulty release"


def main(deliveries: int = 200, rate: int = 50) -> None:
    import boto3

    from bench.scenarios.harness import Harness
    from bench.scenarios.metering import Meter, metering_new_clients
    from ops.drive import Session, poll
    from ops.drive import meta_payloads as meta
    from pipeline import schema
    from pipeline.adapters.items import to_item
    from pipeline.tasks.messages import message_key

    holder: dict[str, Any] = {}

    def group_of(service: str, params: Mapping[str, Any]) -> str | None:
        session: Session | None = holder.get("session")
        if session is None or service != "dynamodb":
            return None
        if session.runtime.capture.current() == holder["consumer"] or threading.current_thread().name.startswith(
            "messages:"
        ):
            return "consumer"
        return None

    meter = Meter(lambda: boto3.session.Session(region_name="us-east-1").client("dynamodb"))
    waba = f"waba-replay-{uuid.uuid4().hex[:6]}"
    wamids = [f"wamid.replay.{n}" for n in range(deliveries)]
    with metering_new_clients(meter, group_of), Harness().session(cli=True) as s:
        holder["consumer"] = s.function_name("messages")
        for wamid in wamids:
            s.client.deliver(meta.whatsapp_message(waba, wamid, f"text {wamid}"))
        stored = poll(lambda: all(s.stored_message(waba, w, meta.CUSTOMER) for w in wamids), 120, interval=1)
        assert stored, "the deliveries were not all stored"
        s.settle(10)
        person = s.person_hash(meta.CUSTOMER)
        for wamid in wamids:
            s.aws("dynamodb").update_item(
                TableName=s.outputs["DataTableName"],
                Key=to_item(message_key(waba, wamid, person)),
                UpdateExpression="SET #text = :garbled",
                ExpressionAttributeNames={"#text": "text"},
                ExpressionAttributeValues=to_item({":garbled": GARBLED}),
            )

        def items() -> list[dict[str, Any]]:
            return [s.stored_message(waba, w, meta.CUSTOMER) or {} for w in wamids]

        def replay() -> tuple[float, float]:
            """(the rate lanectl reports, the consumer's write units per delivery)."""
            duplicates = s.outcome_count("messages", "duplicate")
            done = s.outcome_count("messages", "done")
            before = meter.usage["consumer"].wcu if "consumer" in meter.usage else 0.0
            holder["session"] = s
            ran = s.lanectl(
                "replay", "--lane", "messages", "--tenant", waba, "--since", "1h", "--generation", "1",
                "--rate", str(rate), timeout=600,
            )  # fmt: skip
            assert ran.returncode == 0, ran.stderr
            poll(
                lambda: (
                    s.outcome_count("messages", "duplicate") + s.outcome_count("messages", "done")
                    >= duplicates + done + deliveries
                ),
                120,
                interval=0.5,
            )
            s.settle(10)
            holder.pop("session")
            achieved = re.search(r"\(([\d.]+) msg/s achieved\)", ran.stdout)
            wcu = meter.usage["consumer"].wcu - before
            return float(achieved.group(1)) if achieved else 0.0, wcu / deliveries

        started = time.monotonic()
        first_rate, first_units = replay()
        first_seconds = time.monotonic() - started
        after_first = items()
        rerun = sum(1 for i in after_first if i.get("text") != GARBLED and i.get(schema.GENERATION) == 1)
        second_rate, second_units = replay()
        changed = sum(1 for old, new in zip(after_first, items(), strict=True) if old != new)
    print(f"replay of {deliveries} WhatsApp texts of one tenant on the local runtime (lanectl replay, generation 1)")
    print(f"  rate asked {rate} msg/s; achieved {first_rate:.1f} msg/s (first), {second_rate:.1f} msg/s (second)")
    print(f"  effects re-run: {rerun} of {deliveries} (text restored, generation 1), in {first_seconds:.1f} s")
    print(f"  second identical replay: {changed} item(s) changed")
    print(f"  consumer write units per replayed delivery: {first_units:.2f} (first), {second_units:.2f} (second)")


if __name__ == "__main__":
    main(*(int(arg) for arg in sys.argv[1:3]))
