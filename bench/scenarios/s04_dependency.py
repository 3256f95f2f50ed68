"""4. Dependency throttled: the model vendor slows down tenfold while both of its lanes are busy.

The ai lane (reply turns) and the engagement lane (comment triage) share the `llm` dependency,
whose budget in the local environment is 2 concurrent calls (the vendor's quota). Producers send
one AI job and one comment webhook a second; for `slow_seconds` in the middle the simulated
model's latency goes from `latency_ms` to ten times that (an operator-style configuration change
of both consumers), then back.

- this pipeline: the budget enforced: a task that finds it exhausted is deferred (re-sent with a
  delay, not an attempt);
- baseline: the same budget in observe mode, i.e. each lane bounded only by its own mapping's
  MaximumConcurrency.

Measured by a probe on the local model (its own view): calls in progress at every
moment, and how many calls started while the quota was already in use (a vendor enforcing its
quota would have refused those with a 429). Also: every accepted job answered and every comment
triaged, and how long the backlog took to drain once the vendor recovered.
"""

from __future__ import annotations

import threading
import time
import uuid
from dataclasses import dataclass, field

from bench.scenarios.harness import Harness
from bench.scenarios.measure import fmt, overlap_series, peak_overlap, vendor_probe
from bench.scenarios.result import Result
from ops.drive import Session, poll
from ops.drive import meta_payloads as meta

LANES = ("ai", "engagement")


@dataclass(frozen=True)
class Params:
    per_second: float = 1.0
    seconds: float = 24.0
    slow_at: float = 4.0
    slow_seconds: float = 12.0
    latency_ms: int = 200
    factor: int = 10
    drain_timeout: float = 90.0


FULL = Params()
QUICK = Params(seconds=4.0, slow_at=0.5, slow_seconds=3.0, per_second=1.5)


@dataclass
class Phase:
    label: str
    started: float
    slow_from: float = 0.0
    slow_until: float = 0.0
    drained_at: float | None = None
    calls: list[tuple[float, float]] = field(default_factory=list)
    over_quota: int = 0
    jobs: dict[str, str] = field(default_factory=dict)
    """conversation -> tenant, for accepted AI jobs"""
    comments: dict[str, str] = field(default_factory=dict)
    """comment id -> page"""
    answered: int = 0
    triaged: int = 0
    shed: int = 0
    deferred: int = 0
    dead: int = 0

    @property
    def peak(self) -> int:
        return peak_overlap(self.calls)

    @property
    def complete(self) -> bool:
        return self.answered == len(self.jobs) and self.triaged == len(self.comments)


def _set_latency(s: Session, ms: int) -> None:
    s.configure_model(latency_ms=ms)


def _done(s: Session, phase: Phase) -> tuple[int, int]:
    answered = sum(
        1
        for conversation, tenant in phase.jobs.items()
        if any(str(i.get("sk", "")).startswith("reply#") for i in s.items(f"conversation#{tenant}#{conversation}"))
    )
    triaged = sum(
        1
        for comment, page in phase.comments.items()
        if (item := s.stored_comment(page, comment, meta.commenter(comment))) is not None
        and item.get("label", "untriaged") != "untriaged"
    )
    return answered, triaged


def _phase(s: Session, p: Params, label: str, mode: str) -> Phase:

    s.configure_dependency(list(LANES), mode=mode)
    tag = uuid.uuid4().hex[:6]
    phase = Phase(label=label, started=time.time())
    records_before = len(s.log.outcomes())
    with vendor_probe() as probe:
        stop = threading.Event()

        def producer() -> None:
            n = 0
            next_at = time.monotonic()
            ends = next_at + p.seconds
            while not stop.is_set() and time.monotonic() < ends:
                tenant, conversation = f"shop-{label}-{n % 5}-{tag}", f"conv-{n}-{tag}"
                response = s.client.submit_job(
                    lane="ai",
                    kind="ai.inbound",
                    tenant=tenant,
                    payload={"conversation": conversation, "message_id": f"m{n}", "text": f"do you ship to zone {n}?"},
                )
                if response.status == 202:
                    phase.jobs[conversation] = tenant
                else:
                    phase.shed += 1
                page, comment = f"page-{label}-{n % 5}-{tag}", f"c{n}-{tag}"
                if s.client.deliver(meta.page_comment(page, comment, f"price of item {n}?")).status == 200:
                    phase.comments[comment] = page
                n += 1
                next_at += 1 / p.per_second
                time.sleep(max(0.0, next_at - time.monotonic()))

        thread = threading.Thread(target=producer, name="producer", daemon=True)
        thread.start()
        time.sleep(p.slow_at)
        phase.slow_from = time.time()
        _set_latency(s, p.latency_ms * p.factor)
        time.sleep(max(0.0, phase.slow_from + p.slow_seconds - time.time()))
        _set_latency(s, p.latency_ms)
        phase.slow_until = time.time()
        thread.join()

        def finished() -> bool:
            phase.answered, phase.triaged = _done(s, phase)
            return phase.complete

        if poll(finished, p.drain_timeout, interval=1.0):
            phase.drained_at = time.time()
        s.settle(10)
        phase.calls = [(c.start, c.end) for c in probe.calls if c.start >= phase.started]
        phase.over_quota = sum(1 for c in probe.calls if c.start >= phase.started and c.in_progress_at_start >= 2)
    lines = s.log.outcomes()[records_before:]
    phase.deferred = sum(1 for r in lines if r.outcome == "deferred" and r.lane in LANES)
    phase.dead = sum(1 for r in lines if r.outcome == "dead_lettered" and r.lane in LANES)
    return phase


def run(h: Harness, p: Params = FULL) -> Result:
    result = Result(
        number=4,
        title="Dependency throttled",
        question=f"The model vendor's latency goes x{p.factor} for {p.slow_seconds:g} s while two lanes call it: "
        "does the pipeline keep to the vendor's quota, lose nothing, and recover?",
        baseline="the same dependency budget in observe mode (each lane bounded only by its own concurrency)",
        project_label="budget enforced",
        baseline_label="budget observed",
    )
    started = time.monotonic()
    with h.session() as s:
        _set_latency(s, p.latency_ms)
        dependency = s.runtime.env.dependency("llm")
        engagement_batch = s.runtime.env.lane("engagement").policy.batch_size
        observed = _phase(s, p, "observe", "observe")
        poll(lambda: s.lanes_empty(*LANES), 30)
        enforced = _phase(s, p, "enforce", "enforce")
    budget = dependency.limit

    def drain(ph: Phase) -> str:
        return f"{fmt(ph.drained_at - ph.slow_until)} s" if ph.drained_at else "did not drain"

    result.figure("vendor calls in progress (peak)", str(enforced.peak), str(observed.peak), f"budget {budget}")
    result.figure(
        "calls started over the vendor's quota",
        str(enforced.over_quota),
        str(observed.over_quota),
        f"would be 429s from a vendor enforcing {dependency.vendor_quota}",
    )
    result.figure("vendor calls made", str(len(enforced.calls)), str(len(observed.calls)))
    result.figure(
        "AI jobs answered / accepted",
        f"{enforced.answered}/{len(enforced.jobs)}",
        f"{observed.answered}/{len(observed.jobs)}",
    )
    result.figure(
        "comments triaged / delivered",
        f"{enforced.triaged}/{len(enforced.comments)}",
        f"{observed.triaged}/{len(observed.comments)}",
    )
    result.figure("jobs shed by admission (503)", str(enforced.shed), str(observed.shed))
    result.figure("deferrals (budget exhausted)", str(enforced.deferred), str(observed.deferred))
    result.figure("dead-lettered", str(enforced.dead), str(observed.dead))
    result.figure("backlog drained after the vendor recovered", drain(enforced), drain(observed))
    result.check(
        "peak concurrent vendor calls never exceed the budget",
        enforced.peak <= budget,
        f"peak {enforced.peak} <= {budget} (observe mode reached {observed.peak})",
    )
    result.check(
        "nothing lost: every accepted job answered, every comment triaged",
        enforced.complete and enforced.dead == 0,
        f"{enforced.answered}/{len(enforced.jobs)} answered, {enforced.triaged}/{len(enforced.comments)} "
        f"triaged, {enforced.dead} dead-lettered",
    )
    result.check("the backlog drains after the vendor recovers", enforced.drained_at is not None, drain(enforced))
    result.check(
        "without enforcement the vendor sees more than its quota",
        observed.peak > budget,
        f"observe mode peak {observed.peak}",
    )
    result.headline = (
        f"peak {enforced.peak} concurrent vendor calls against a budget of {budget} "
        f"({observed.peak} in observe mode, {observed.over_quota} calls over quota); nothing lost; "
        f"drained {drain(enforced)} after recovery"
    )
    result.data.update(
        peak=enforced.peak,
        observed_peak=observed.peak,
        budget=budget,
        complete=enforced.complete,
        drained=enforced.drained_at is not None,
        dead=enforced.dead,
    )
    result.method = [
        "ai lane (MaximumConcurrency 3, batch 1) and engagement lane (MaximumConcurrency 3, batch "
        f"{engagement_batch}) share "
        f"the llm budget of {budget}. One ai.inbound job (its reply turn calls the model) and one comment webhook "
        f"a second for {p.seconds:g} s.",
        f"Model latency {p.latency_ms} ms, x{p.factor} from t+{p.slow_at:g} s for {p.slow_seconds:g} s "
        "(UpdateFunctionConfiguration of both consumers), observe-mode run first, then enforce, one runtime.",
        "Calls in progress are counted at the local model itself, not from the budget's own counter.",
    ]
    result.caveats = [
        "The local model is run with no rate limit of its own here; 'calls over quota' counts the calls a vendor "
        "enforcing it would have answered 429, each of which would cost a retry and a receive.",
        "The throttled phase deliberately overloads the vendor: arrivals need two calls a second, the slow "
        f"vendor can do {budget / (p.latency_ms * p.factor / 1000):g} within budget, so a backlog builds; the "
        "jobs API's admission may shed AI jobs with 503 (counted above), which is the design working.",
    ]
    if h.plot_dir is not None:
        from bench.scenarios import plots

        step = 0.1
        panels = []
        for ph, name in ((enforced, "budget enforced"), (observed, "budget observed")):
            end = max([b for _, b in ph.calls] + [ph.slow_until + 1])
            series = overlap_series(ph.calls, ph.started, end, step)
            panels.append(
                (
                    f"calls in progress\n({name})",
                    {name: ([i * step for i in range(len(series))], series)},
                )
            )
        span = (enforced.slow_from - enforced.started, enforced.slow_until - enforced.started, f"latency x{p.factor}")
        result.plots.append(
            plots.timeseries(
                h.plot_dir / "s04_dependency_calls.png",
                f"Concurrent calls at the vendor (budget {budget}); shaded: vendor latency x{p.factor}",
                panels,
                spans=[span],
                hlines=[(budget, f"budget {budget}")],
                step=True,
            )
        )
    result.seconds = time.monotonic() - started
    return result
