"""7. Lease expiry: a reply turn outlives its message's visibility timeout.

The ai lane's queue has its visibility timeout cut to `visibility_seconds` (SetQueueAttributes,
the misconfiguration that causes this in practice), and the local model (the fake of Bedrock's Converse) answers after
`latency_ms`, longer than that. So while a turn is still waiting for the model, SQS hands the
same message to another consumer, which starts the same turn again (the article's "a report that
takes 45 s runs twice, every time, and nothing errors").

- this pipeline: the turn claims its message on the conversation's marker before the model call
  (tasks/turn_claims.py), so a copy delivered while the first run is alive is deferred without
  calling the model; the first run commits its reply with the turn's done-marker in one
  conditional transaction, and copies delivered after that are acknowledged as duplicates;
- baseline: a consumer with neither, which runs the turn and applies its effect on every
  delivery: as many model calls and replies as deliveries.

Measured: how many times each turn's message was delivered (the consumer's outcome lines), how
many times it ran (calls at the local model, by prompt), how many reply items each conversation
holds.
"""

from __future__ import annotations

import itertools
import time
import uuid
from dataclasses import dataclass

from bench.scenarios.harness import Harness
from bench.scenarios.measure import vendor_probe
from bench.scenarios.result import Result
from ops.drive import poll
from pipeline.tasks import ai

LANE = "ai"


@dataclass(frozen=True)
class Params:
    turns: int = 4
    latency_ms: int = 4000
    visibility_seconds: int = 2
    spacing_seconds: float = 4.5
    """Between jobs: one turn at a time leaves a slot of the llm budget (2) free for its second run,
    so the lease expiry, not the budget, decides what happens."""


FULL = Params()
QUICK = Params(turns=1)


def run(h: Harness, p: Params = FULL) -> Result:
    result = Result(
        number=7,
        title="Lease expiry",
        question=f"A reply turn takes {p.latency_ms / 1000:g} s and its message's visibility is "
        f"{p.visibility_seconds} s: how often does it run, and how many replies are written?",
        baseline="a consumer that applies its effect on every run (no done-marker committed with the effect)",
        project_label="effect + done-mark in one transaction",
        baseline_label="effect per run",
    )
    started = time.monotonic()
    tag = uuid.uuid4().hex[:6]
    conversations = [f"conv-{tag}-{n}" for n in range(p.turns)]
    tenant = f"shop-lease-{tag}"
    with h.session() as s, vendor_probe() as probe:
        s.configure_lane(LANE, options={"debounce_seconds": "0"})
        s.configure_model(latency_ms=p.latency_ms)
        previous = s.set_queue_attributes(LANE, {"VisibilityTimeout": str(p.visibility_seconds)})
        for n, conversation in enumerate(conversations):
            response = s.client.submit_job(
                lane=LANE,
                kind="ai.inbound",
                tenant=tenant,
                payload={"conversation": conversation, "message_id": "m0", "text": f"question {tag}-{n}: refund?"},
            )
            if response.status != 202:
                raise RuntimeError(f"job refused: {response.status} {response.text}")
            if n < len(conversations) - 1:
                time.sleep(p.spacing_seconds)

        def replies() -> dict[str, int]:
            return {
                c: sum(1 for i in s.items(f"conversation#{tenant}#{c}") if str(i.get("sk", "")).startswith("reply#"))
                for c in conversations
            }

        poll(lambda: all(v >= 1 for v in replies().values()), 60, interval=1.0)
        # Let every duplicate run still in progress finish and try to commit.
        poll(lambda: s.lanes_empty(LANE) and probe.in_progress == 0, 30)
        s.settle(15)
        counts = replies()
        runs = {c: len(probe.for_prompt(f"question {tag}-{n}:")) for n, c in enumerate(conversations)}
        overlaps = []
        for n, _conversation in enumerate(conversations):
            calls = sorted(probe.for_prompt(f"question {tag}-{n}:"), key=lambda call: call.start)
            overlaps += [b.start - a.start for a, b in itertools.pairwise(calls) if b.start < a.end]
        turn_ids = {ai.turn_id(tenant, c, "m0") for c in conversations}
        lines = s.log.outcomes(lane=LANE, ids=turn_ids)
        outcomes: dict[str, int] = {}
        for line in lines:
            outcomes[line.outcome] = outcomes.get(line.outcome, 0) + 1
        s.set_queue_attributes(LANE, previous)
    total_runs = sum(runs.values())
    deliveries = sum(outcomes.values())
    effects = sum(counts.values())
    result.figure("turns", str(len(conversations)), str(len(conversations)))
    result.figure("deliveries of their messages", str(deliveries), str(deliveries), "same traffic, same expiry")
    result.figure("runs of those turns (model calls)", str(total_runs), f"{deliveries} (one per delivery)")
    result.figure("runs while another was alive", str(len(overlaps)), "")
    result.figure("reply items written", str(effects), f"{deliveries} (one per run)")
    result.figure(
        "consumer outcomes for the turns",
        ", ".join(f"{k} {v}" for k, v in sorted(outcomes.items())),
        "",
    )
    result.check(
        "the lease expired mid-task: the messages were delivered again while their turns ran",
        deliveries > len(conversations),
        f"{deliveries} deliveries of {len(conversations)} turns",
    )
    result.check(
        "each turn called the model once",
        total_runs == len(conversations) and not overlaps,
        f"{total_runs} calls for {len(conversations)} turns",
    )
    result.check(
        "exactly one reply per conversation",
        all(v == 1 for v in counts.values()),
        f"{sorted(counts.values())}",
    )
    result.headline = (
        f"{deliveries} deliveries of {len(conversations)} turns made {total_runs} model calls and wrote {effects} "
        f"replies; a consumer without the claim and the done-mark would have made {deliveries} of each"
    )
    result.data.update(
        runs=total_runs, turns=len(conversations), deliveries=deliveries, effects=counts, overlaps=len(overlaps)
    )
    result.method = [
        f"ai lane, {p.turns} ai.inbound jobs {p.spacing_seconds:g} s apart (one conversation each, debounce 0); "
        "the queue's visibility timeout "
        f"cut from {previous.get('VisibilityTimeout')} s to {p.visibility_seconds} s; model latency "
        f"{p.latency_ms} ms (below the task's time limit, so the first run is not cut short).",
        "Runs are counted where they cannot be hidden: calls arriving at the local model with that turn's "
        "prompt. Replies are the `reply#` items in each conversation.",
        "The baseline is counted, not run: a consumer that writes its effect on every run writes once per run.",
    ]
    result.caveats = [
        "A deferral acknowledges the message the first run still holds and sends it again later; the first "
        "run's own delete then fails silently. The copy sent again finds the done-mark, or the claim again.",
        "The claim is the ai turn's: other work that calls out still repeats its call when its lease expires "
        "(only its writes are once). The fix for the cause is the lane's visibility (6 x the function "
        "timeout), which the stack sets.",
    ]
    if h.plot_dir is not None:
        from bench.scenarios import plots

        result.plots.append(
            plots.bars(
                h.plot_dir / "s07_lease_expiry.png",
                "Runs vs replies written, per conversation",
                [f"conv {n}" for n in range(len(conversations))],
                {
                    "runs (model calls)": [float(runs[c]) for c in conversations],
                    "replies written (this pipeline)": [float(counts[c]) for c in conversations],
                },
                ylabel="count",
            )
        )
    result.seconds = time.monotonic() - started
    return result
