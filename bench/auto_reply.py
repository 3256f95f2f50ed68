"""Auto-reply on the local runtime: from the door's 200 to the reply at the Graph endpoint.

`python -m bench.auto_reply [CONVERSATIONS] [MODEL_MS]` (20 and 1000 by default). The runtime is
the one `make demo` runs (ops/drive), with shop-1's auto-reply on and the ai lane at its local
budget (3 slots, a 1 s debounce). Each of CONVERSATIONS customers sends a burst of three signed
WhatsApp texts to shop-1's number, the bursts interleaved so every conversation is live at once;
the model (the runtime's Converse fake) answers in MODEL_MS.

Printed, and written as bench/REPORT.md's section (bench/report/auto_reply.md): for each
conversation, the time from the door's 200 for its burst's last text to its reply in the Graph
fake's outbox, as p50, p99 and max; the model's calls per burst (the goal is 1: a burst read by
one turn); the replies per conversation (must be 1).
"""

from __future__ import annotations

import statistics
import sys
import time
import uuid
from pathlib import Path

REPORT = Path(__file__).parent / "report" / "auto_reply.md"
SETTLE_SECONDS = 5.0
"""How long after every conversation's first reply a second one is waited for."""


def _percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(share * len(ordered) + 0.5) - 1))]


def main(conversations: int = 20, model_ms: int = 1000) -> None:
    from ops.drive import Harness, poll
    from ops.drive import meta_payloads as meta
    from stacks.config.environments import LOCAL_ASSETS, LOCAL_SHOP

    shop = LOCAL_ASSETS.tenants[LOCAL_SHOP]
    waba, number = shop.waba[0], shop.phones[0]
    run = uuid.uuid4().hex[:4]
    customers = [f"44770{n:03d}{uuid.uuid4().int % 10000:04d}" for n in range(conversations)]
    harness = Harness()
    with harness.session() as session:
        session.configure_model(latency_ms=model_ms)
        calls_before = len(session.runtime.model.calls())
        answered_at: dict[str, float] = {}
        for burst, text in enumerate(("hi", "are you open", "on Sunday?")):
            for customer in customers:
                delivery = meta.whatsapp_text_to(waba, number, f"wamid.{run}-{customer}-{burst}", text, customer)
                assert session.client.deliver(delivery).status == 200
                answered_at[customer] = time.time()

        def replies() -> dict[str, list[float]]:
            found: dict[str, list[float]] = {}
            for sent in session.runtime.graph.outbox():
                if sent.recipient in answered_at:
                    found.setdefault(sent.recipient, []).append(sent.at)
            return found

        poll(lambda: len(replies()) == conversations, 120, interval=0.2)
        time.sleep(SETTLE_SECONDS)
        found = replies()
        calls = len(session.runtime.model.calls()) - calls_before
    harness.close()
    latencies = [min(found[c]) - answered_at[c] for c in customers if c in found]
    counts = [len(found.get(c, [])) for c in customers]
    figures = [
        f"auto-reply, {conversations} conversations at once, 3 texts each, model {model_ms} ms, local ai budget",
        (
            f"door's 200 (last text) to the reply at the Graph endpoint: p50 {statistics.median(latencies):.2f} s, "
            f"p99 {_percentile(latencies, 0.99):.2f} s, max {max(latencies):.2f} s"
            if latencies
            else "no conversation was answered"
        ),
        f"model calls per burst: {calls / conversations:.2f} ({calls} calls)",
        f"replies per conversation: {sorted(set(counts))} ({sum(counts)} replies, {len(latencies)} answered)",
    ]
    print("\n".join(figures))
    REPORT.write_text(_section(figures), encoding="utf-8")


def _section(figures: list[str]) -> str:
    """bench/REPORT.md's section, kept by `make scenarios` as this bench wrote it."""
    lines = [
        "## Auto-reply: from the door's 200 to the reply",
        "",
        "Written by `python -m bench.auto_reply` (bench/auto_reply.py) on the local runtime: shop-1's",
        "customers each send three WhatsApp texts to the door, the bursts interleaved; the messages lane",
        "hands each to the ai lane, which answers each burst one debounce (1 s locally) after its newest",
        "text, three turns at a time (the local ai lane's budget), the model answering in the stated time.",
        "",
        *[f"- {figure}" for figure in figures],
        "",
        "Most of the wait beyond debounce plus model is the budget's queue: 20 conversations over 3 slots,",
        "on a 2-CPU machine shared with other work. Production's ai lane has 40 slots and a 4 s debounce.",
    ]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    args = [int(a) for a in sys.argv[1:3]]
    main(*args)
