"""Tokens-a-minute budgets: twice a model's tokens a minute offered, what the budget let through.

`python -m bench.token_budgets [SECONDS]` (18 by default), also run at the end of
bench/rate_budgets.py. The minute is scaled to 6 s so a run holds three windows: the budget is a
`Rate` like any other (domain/dependencies/token_rates.py), its slices a ninth of the window, so the
arithmetic is the minute's at a tenth of the time. Four consumer instances (threads, each with
its own token keeper, sharing the counters in moto's DynamoDB through the consumer's adapter)
offer calls reserving 600 to 1 600 tokens (a maxTokens of 512 plus prompts of 350 to 4 350
characters) at twice the limit.

Printed: calls offered, taken and deferred; the highest tokens reserved in any window (wherever
it starts) against the limit; the throughput the slices allow; and the counters' write units per
call offered (every UpdateItem on an item under 1 KB, taken or refused, is one).
"""

from __future__ import annotations

import random
import sys
import threading
import time
from typing import Any

from bench.budget_shards import _state_table
from bench.consumer_world import REGION, fake_aws

LIMIT = 60_000
"""Tokens a scaled window: a model quota of 60 000 tokens a minute."""
WINDOW_SECONDS = 6.0
INSTANCES = 4
MAX_TOKENS = 512


def _most_in_any_window(taken: list[tuple[float, int]], window: float) -> int:
    taken = sorted(taken)
    most, start, total = 0, 0, 0
    for at, tokens in taken:
        total += tokens
        while taken[start][0] <= at - window:
            total -= taken[start][1]
            start += 1
        most = max(most, total)
    return most


def main(argv: list[str]) -> None:
    seconds = float(argv[0]) if argv else 18.0
    if not 0 < seconds <= 60:
        raise SystemExit("SECONDS must be within 0..60: a bounded load on moto")
    with fake_aws():
        run(seconds)


def run(seconds: float) -> None:
    import boto3

    from pipeline.adapters.token_windows import TokenCounters
    from pipeline.domain.dependencies.rates import Rate
    from pipeline.domain.dependencies.token_rates import TokenKeeper, reservation

    dynamodb = boto3.client("dynamodb", region_name=REGION)
    _state_table(dynamodb)
    writes = [0]
    lock = threading.Lock()

    def count(params: dict[str, Any], **_: Any) -> None:
        with lock:
            writes[0] += 1

    dynamodb.meta.events.register("provide-client-params.dynamodb.UpdateItem", count)
    counters = TokenCounters(dynamodb, "state")
    rate = Rate("tokens#bench-model", LIMIT, WINDOW_SECONDS)
    mean_call = MAX_TOKENS + (350 + 4_350) / 2 / 4
    interval = INSTANCES * mean_call / (2 * LIMIT / WINDOW_SECONDS)
    taken: list[tuple[float, int]] = []
    offered = [0]

    def instance(n: int) -> None:
        keeper = TokenKeeper(counters, time.time)
        rng = random.Random(n)
        started = time.monotonic() + n * interval / INSTANCES
        for tick in range(int(seconds / interval)):
            time.sleep(max(0.0, started + tick * interval - time.monotonic()))
            tokens = reservation(MAX_TOKENS, "x" * rng.randint(350, 4_350))
            with lock:
                offered[0] += 1
            if keeper.take(rate, tokens):
                with lock:
                    taken.append((time.time(), tokens))

    threads = [threading.Thread(target=instance, args=(n,)) for n in range(INSTANCES)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    most = _most_in_any_window(taken, WINDOW_SECONDS)
    print(
        f"tokens a minute (scaled to {WINDOW_SECONDS:g} s): limit {LIMIT}, offered twice it for {seconds:g} s "
        f"from {INSTANCES} instances; slices of {rate.per_slice()} tokens, {rate.throughput} a window of aligned "
        f"slices, at most {(rate.slice_count + 1) * rate.per_slice()} in one straddling {rate.slice_count + 1}"
    )
    print(
        f"calls offered {offered[0]}, taken {len(taken)}, deferred {offered[0] - len(taken)}; "
        f"most tokens in any window {most} of {LIMIT}; write units per call offered "
        f"{writes[0] / max(1, offered[0]):.3f} (per call taken {writes[0] / max(1, len(taken)):.3f})"
    )


if __name__ == "__main__":
    main(sys.argv[1:])
