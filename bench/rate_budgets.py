"""Rate budgets against the local Graph API: twice each number's rate offered, what Meta saw.

`python -m bench.rate_budgets [SECONDS]` (4 by default). Two business phone numbers, each with
Meta's default of 80 messages a second, are offered 160 a second each from four consumer
instances (threads, each with its own rate keeper, sharing the counters in moto's DynamoDB
through the consumer's own adapter). A send the budget allows goes to the fake Graph API over
HTTP on 127.0.0.1, which enforces the same 80 a second and answers Meta's 130429 beyond it.

Printed per number: sends offered, sent and deferred; the highest count Meta's fake accepted in
any one second (from its outbox, wherever the second starts), which must not exceed the rate; its
refusals; and the counters' write units (every UpdateItem on an item under 1 KB, counted or
refused, is one) per send made and per send offered.
"""

from __future__ import annotations

import sys
import threading
import time
from collections import Counter
from typing import Any

from bench.budget_shards import _state_table
from bench.consumer_costs import item_size
from bench.consumer_world import REGION, fake_aws

NUMBERS = ("1098765", "2098765")
PER_SECOND = 80
INSTANCES = 4
TOKEN = "bench-token"


class _Token:
    def get(self) -> str:
        return TOKEN

    def forget(self) -> None:
        return


def _most_in_one_second(times: list[float]) -> int:
    times = sorted(times)
    most, start = 0, 0
    for end, at in enumerate(times):
        while times[start] <= at - 1.0:
            start += 1
        most = max(most, end - start + 1)
    return most


def main(argv: list[str]) -> None:
    seconds = float(argv[0]) if argv else 4.0
    if not 0 < seconds <= 30:
        raise SystemExit("SECONDS must be within 0..30: a bounded load on 127.0.0.1")
    with fake_aws():
        _run(seconds)
    from bench import token_budgets

    token_budgets.main([])


def _run(seconds: float) -> None:
    import boto3

    from local_aws.graph_fake import GraphFake
    from pipeline.adapters.graph_api import GraphSender
    from pipeline.adapters.rate_windows import SliceCounters
    from pipeline.domain.dependencies import meta_send as ms
    from pipeline.domain.dependencies.rates import RateKeeper, whatsapp_number

    dynamodb = boto3.client("dynamodb", region_name=REGION)
    _state_table(dynamodb)
    writes: Counter[str] = Counter()
    lock = threading.Lock()

    def count(params: dict[str, Any], **_: Any) -> None:
        key = str(params.get("Key", {}).get("pk", {}).get("S", ""))
        with lock:
            writes[key.split("#")[2] if key.count("#") >= 3 else key] += 1

    dynamodb.meta.events.register("provide-client-params.dynamodb.UpdateItem", count)
    graph = GraphFake(token=TOKEN)
    graph.configure(messages_per_second=PER_SECOND)
    graph.start()
    counters = SliceCounters(dynamodb, "state")
    sender = GraphSender(graph.url, _Token())  # type: ignore[arg-type]
    offered: Counter[str] = Counter()
    deferred: Counter[str] = Counter()
    other: Counter[str] = Counter()
    interval = INSTANCES / (2 * PER_SECOND)

    def instance(n: int) -> None:
        keeper = RateKeeper(counters, time.time)
        started = time.monotonic() + n * interval / INSTANCES
        for tick in range(int(seconds / interval)):
            time.sleep(max(0.0, started + tick * interval - time.monotonic()))
            for number in NUMBERS:
                rate = whatsapp_number(number, PER_SECOND)
                with lock:
                    offered[number] += 1
                if not keeper.take(rate):
                    with lock:
                        deferred[number] += 1
                    continue
                try:
                    sender.send(ms.ReplyTo(ms.WHATSAPP, number, f"1555{n}{tick:06d}"), "hi", "cb", timeout=5.0)
                except ms.SendRefused as refused:
                    keeper.throttled(rate)
                    with lock:
                        other[f"{number}:{refused.code}"] += 1

    threads = [threading.Thread(target=instance, args=(n,)) for n in range(INSTANCES)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    graph.stop()
    _report(seconds, graph, dynamodb, writes, offered, deferred, other)


def _report(  # type: ignore[no-untyped-def]
    seconds: float, graph, dynamodb, writes: Counter[str], offered: Counter[str], deferred: Counter[str], other
) -> None:
    from pipeline.domain.dependencies.rates import whatsapp_number

    rate = whatsapp_number(NUMBERS[0], PER_SECOND)
    sample = dynamodb.scan(TableName="state", Limit=1)["Items"]
    size = item_size(sample[0]) if sample else 0
    print(f"offered twice the rate for {seconds:g} s from {INSTANCES} instances; rate {PER_SECOND}/s per number")
    print(
        f"slices of {rate.slice_seconds * 1000:.0f} ms, {rate.per_slice()} sends each: "
        f"at most {rate.throughput}/s taken; a counter item is {size} bytes (one write unit a write)"
    )
    header = (
        f"{'number':>8} {'offered':>8} {'sent':>6} {'deferred':>9} {'max in 1 s':>11} "
        f"{'refused':>8} {'WU/sent':>8} {'WU/offered':>11}"
    )
    print(header)
    for number in NUMBERS:
        accepted = [s.at for s in graph.outbox() if s.business_id == number]
        refused = sum(1 for r in graph.refused() if r.business_id == number)
        units = writes[number]
        print(
            f"{number:>8} {offered[number]:>8} {len(accepted):>6} {deferred[number]:>9} "
            f"{_most_in_one_second(accepted):>11} {refused:>8} {units / max(1, len(accepted)):>8.3f} "
            f"{units / max(1, offered[number]):>11.3f}"
        )
    if other:
        print("Meta's refusals:", dict(other))


if __name__ == "__main__":
    main(sys.argv[1:])
