"""`make bench`: every micro-benchmark, one after the other, figures printed (none asserted).

The queueing scenarios are separate (`make scenarios`): they take minutes, not seconds.
"""

from __future__ import annotations

from bench import (
    budget_shards,
    consumer_bench,
    door_bytecode,
    fair_queue_bench,
    ingress_bench,
    item_codec_bench,
    rate_budgets,
)


def main() -> None:
    for title, run in (
        ("webhook door", ingress_bench.main),
        ("webhook door from source and from bytecode", door_bytecode.main),
        ("item codec", item_codec_bench.main),
        ("lane consumer", consumer_bench.main),
        ("fair queue receive", fair_queue_bench.main),
        ("llm budget shards", budget_shards.main),
        ("rate budgets at twice the rate", rate_budgets.main),
    ):
        print(f"\n######## {title}\n", flush=True)
        run([])


if __name__ == "__main__":
    main()
