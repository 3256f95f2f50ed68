"""5. Spike with client retries (the metastable case): deadlines on jobs, or none.

A producer posts AI reply jobs (ai.inbound; its reply turn calls the local model) at a base
rate, spikes for a few seconds, then returns to the base rate. Each caller waits `timeout`
seconds for its reply; if none has been written by then it gives up and posts again (a new
job), up to `retries` times; a 503 from admission is a failed attempt too, retried after its
Retry-After (capped at the timeout). Two runs, each in a fresh runtime:

- this pipeline: each job carries `deadline` = the moment its caller gives up; the consumer drops
  work past its deadline before doing it (marks the job expired) and the reply turn inherits it;
- baseline: the same callers without deadlines (only the lane's default expiry of minutes).

A useful completion is a reply whose turn finished before its caller gave up. Measured from the
consumers' per-record log lines (batch size 1 on this lane, so a line's time is its record's).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

from bench.scenarios.harness import Harness
from bench.scenarios.measure import fmt, per_second, vendor_probe
from bench.scenarios.result import Result
from bench.scenarios.spike_callers import LANE, Callers, Phase, turn_id
from ops.drive import Session


@dataclass(frozen=True)
class Params:
    base_per_second: float = 1.2
    spike_per_second: float = 6.5
    spike_at: float = 8.0
    spike_seconds: float = 8.0
    seconds: float = 56.0
    timeout: float = 8.0
    retries: int = 1
    latency_ms: int = 700
    max_concurrency: int = 2
    producers: int = 8
    judge_recovery: bool = True
    """Whether the run is long enough after the spike to judge recovery (the fast test's is not: it
    judges only where the model's time went)."""


FULL = Params()
QUICK = Params(
    spike_at=1.5,
    spike_seconds=3.0,
    seconds=10.0,
    timeout=3.0,
    spike_per_second=9.0,
    judge_recovery=False,
)


def _phase(s: Session, p: Params, label: str, *, deadlines: bool) -> Phase:
    s.configure_lane(LANE, options={"debounce_seconds": "0"})
    s.configure_model(latency_ms=p.latency_ms)
    s.set_mapping(LANE, max_concurrency=p.max_concurrency)
    phase = Phase(label=label, started=time.time() + 0.5)
    with vendor_probe() as probe:
        Callers(s, p, phase, deadlines=deadlines).run(p.producers)
        phase.model_calls = len(probe.calls) + probe.in_progress
    phase.backlog_end = s.total_depth(LANE)
    for attempt in phase.attempts:
        line = s.log.first_terminal.get(turn_id(attempt))
        if line is None:
            continue
        if line.outcome == "done" and line.at <= attempt.gives_up:
            phase.useful.append(line.at)
        elif line.outcome == "done":
            phase.wasted_turns += 1
        elif line.outcome == "expired":
            phase.expired += 1
    return phase


def _recovery(phase: Phase, p: Params) -> float:
    """Seconds from the end of the spike until useful completions are back to 80% of the base rate
    for good: from then to the end of the run, every 5 s window averages at least that. inf when
    that never happens within the run."""
    rates = phase.rate()[: int(p.seconds)]
    spike_end = int(p.spike_at + p.spike_seconds)
    window = 5
    target = 0.8 * p.base_per_second
    for second in range(spike_end, len(rates) - window + 1):
        if all(
            sum(rates[start : start + window]) / window >= target for start in range(second, len(rates) - window + 1)
        ):
            return float(second - spike_end)
    return math.inf


def _mean(values: list[float]) -> float:
    return sum(values) / len(values) if values else 0.0


def run(h: Harness, p: Params = FULL) -> Result:
    result = Result(
        number=5,
        title="Spike with client retries",
        question=f"Requests spike from {p.base_per_second:g}/s to {p.spike_per_second:g}/s for {p.spike_seconds:g} s; "
        f"callers give up after {p.timeout:g} s and post again: does throughput come back when the spike ends?",
        baseline="the same callers and retries, jobs without deadlines",
        project_label="deadlines on jobs",
        baseline_label="no deadlines",
    )
    started = time.monotonic()
    with h.session() as s:
        ours = _phase(s, p, "deadline", deadlines=True)
    with h.session() as s:
        naive = _phase(s, p, "none", deadlines=False)
    spike_end = p.spike_at + p.spike_seconds
    phases = {"ours": ours, "naive": naive}
    settled = spike_end + p.timeout
    windows = {
        "before the spike": (1.0, p.spike_at),
        "during the spike": (p.spike_at, spike_end),
        f"in the {p.timeout:g} s after it": (spike_end, settled),
        f"from then to the end ({p.seconds - settled:g} s)": (settled, p.seconds),
    }
    for name, (a, b) in windows.items():
        values = {k: _mean(ph.rate()[int(a) : int(b)]) for k, ph in phases.items()}
        result.figure(f"useful replies/s {name}", f"{values['ours']:.2f}", f"{values['naive']:.2f}")
    recovery = {k: _recovery(ph, p) for k, ph in phases.items()}
    result.figure(
        "back to 80% of the base rate after the spike",
        f"{fmt(recovery['ours'])} s",
        f"{fmt(recovery['naive'])} s" if math.isfinite(recovery["naive"]) else "not within the run",
    )
    result.figure(
        "requests answered in time / made",
        f"{ours.requests - ours.failed_requests}/{ours.requests}",
        f"{naive.requests - naive.failed_requests}/{naive.requests}",
    )
    result.figure("attempts posted (with retries)", str(len(ours.attempts)), str(len(naive.attempts)))
    result.figure("model calls made during the run", str(ours.model_calls), str(naive.model_calls))
    result.figure(
        "share of model calls that reached a waiting caller",
        f"{ours.useful_share:.0%}",
        f"{naive.useful_share:.0%}",
    )
    result.figure("replies finished after their caller left", str(ours.wasted_turns), str(naive.wasted_turns))
    result.figure("jobs dropped past their deadline", str(ours.expired), str(naive.expired))
    result.figure(
        "attempts refused by admission (503)",
        str(sum(1 for a in ours.attempts if a.status == 503)),
        str(sum(1 for a in naive.attempts if a.status == 503)),
    )
    result.figure("messages still queued at the end", str(ours.backlog_end), str(naive.backlog_end))
    after = (settled, p.seconds)
    ours_after = _mean(ours.rate()[int(after[0]) : int(after[1])])
    naive_after = _mean(naive.rate()[int(after[0]) : int(after[1])])
    if p.judge_recovery:
        result.check(
            "after the spike, useful throughput is higher with deadlines",
            ours_after > naive_after,
            f"{ours_after:.2f}/s vs {naive_after:.2f}/s",
        )
        result.check(
            "with deadlines, throughput returns to the base rate and stays there",
            math.isfinite(recovery["ours"]),
            f"after {fmt(recovery['ours'])} s",
        )
    result.check("with deadlines, work whose caller has gone is dropped unrun", ours.expired > 0, f"{ours.expired}")
    result.check(
        "with deadlines, a larger share of model calls reaches a caller still waiting",
        ours.useful_share > naive.useful_share,
        f"{ours.useful_share:.0%} vs {naive.useful_share:.0%}",
    )
    naive_recovery = (
        f"{fmt(recovery['naive'])} s" if math.isfinite(recovery["naive"]) else f"not within {p.seconds - spike_end:g} s"
    )
    share = f"{ours.useful_share:.0%} vs {naive.useful_share:.0%} of model calls reached a waiting caller"
    result.headline = (
        f"after the spike {ours_after:.2f} useful replies/s with deadlines vs {naive_after:.2f}/s without; back to "
        f"base in {fmt(recovery['ours'])} s vs {naive_recovery}; {share}"
        if p.judge_recovery
        else f"{share} (too short a run to judge recovery)"
    )
    result.data.update(
        ours_after=ours_after,
        naive_after=naive_after,
        recovery=recovery["ours"],
        share=(ours.useful_share, naive.useful_share),
    )
    capacity = 2 / (p.latency_ms / 1000)
    result.method = [
        f"ai lane, batch 1, MaximumConcurrency set to {p.max_concurrency} (the llm budget, so no turn is deferred "
        f"for the budget and the model is the only bottleneck); every reply turn holds a model slot for "
        f"{p.latency_ms} ms, so replies are bounded at {capacity:g}/s, less the stamps sharing the slots; debounce 0.",
        f"Load: {p.base_per_second:g} new requests/s, {p.spike_per_second:g}/s from t+{p.spike_at:g} s for "
        f"{p.spike_seconds:g} s, for {p.seconds:g} s in all; each caller waits {p.timeout:g} s, then posts again (a "
        f"new job), at most {p.retries} times. Each run in a fresh runtime.",
        "Useful = the reply turn's outcome line is `done` no later than its caller's give-up time.",
        f"{p.retries} retry per request: at the base rate, new requests plus their retries "
        f"({p.base_per_second * (1 + p.retries):g}/s) stay under the reply capacity, so after the spike only the "
        "backlog can keep callers failing: the metastable case. With two retries the load itself "
        f"({p.base_per_second * 3:g}/s) exceeds the capacity, and in a trial run neither configuration recovered "
        "reliably: that is plain overload, which admission control and client retry budgets address, not deadlines.",
    ]
    result.caveats = [
        "Each retry here is a new conversation, so the ai lane's coalescing (a newer message in the same "
        "conversation supersedes an older turn cheaply) does not absorb retries; it would in a real product.",
        "Without deadlines, work still expires after the lane's default expiry (120 s locally), far beyond this run.",
        "The admission controller (503 + Retry-After) is active in both runs; its counts are shown.",
    ]
    if h.plot_dir is not None:
        from bench.scenarios import plots

        def smooth(values: list[float], k: int = 3) -> list[float]:
            return [sum(values[max(0, i - k + 1) : i + 1]) / min(k, i + 1) for i in range(len(values))]

        def offered(ph: Phase) -> list[float]:
            return per_second([a.sent for a in ph.attempts], ph.started, ph.started + ph._span)

        panels = [
            (
                "useful replies/s\n(3 s average)",
                {
                    "deadlines": (list(range(len(ours.rate()))), smooth(ours.rate())),
                    "no deadlines": (list(range(len(naive.rate()))), smooth(naive.rate())),
                },
            ),
            (
                "jobs posted/s\n(incl. retries)",
                {
                    "deadlines": (list(range(len(offered(ours)))), offered(ours)),
                    "no deadlines": (list(range(len(offered(naive)))), offered(naive)),
                },
            ),
        ]
        result.plots.append(
            plots.timeseries(
                h.plot_dir / "s05_spike_throughput.png",
                f"Spike {p.base_per_second:g} -> {p.spike_per_second:g} requests/s; "
                f"callers retry after {p.timeout:g} s",
                panels,
                spans=[(p.spike_at, spike_end, "spike")],
                hlines=[(capacity, f"reply capacity {capacity:g}/s")],
            )
        )
    result.seconds = time.monotonic() - started
    return result
