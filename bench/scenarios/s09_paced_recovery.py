"""9. Paced recovery: a dead-letter queue of a few hundred messages redriven at a set rate.

The model vendor has an outage (every call fails), and the engagement lane's comment webhooks
exhaust their attempts and are dead-lettered by the consumer, with their reasons. The vendor
recovers. Then on-call puts them back:

- this pipeline: `lanectl dlq redrive engagement --rate R` (run as a subprocess against the
  emulator's endpoint, as an operator would; locally it is the CLI's own paced move, since the
  emulator has no StartMessageMoveTask);
- baseline, an unpaced redrive: a loop that receives from the DLQ, sends to the lane and deletes
  as fast as it can (what a hurried script does).

Measured while each drains (sampled every 0.1 s from the runtime): the DLQ's depth (the achieved
rate), the lane's depth and oldest message age, consumer batches in flight (the mapping's own
counter), calls in progress at the local model, and deferrals. Then every comment must be
triaged, once.
"""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass, field

from bench.scenarios.dlq_redrives import lanectl_redrive, unpaced_redrive
from bench.scenarios.harness import Harness, Sampler, fan_out
from bench.scenarios.measure import fmt, mean, vendor_probe
from bench.scenarios.result import Result
from ops.drive import Session, poll
from ops.drive import meta_payloads as meta

LANE = "engagement"


@dataclass(frozen=True)
class Params:
    messages: int = 150
    rate: int = 10
    latency_ms: int = 100
    pages: int = 30
    producers: int = 4


FULL = Params()
QUICK = Params(messages=40, rate=5, pages=20)


@dataclass
class Drain:
    label: str
    started: float = 0.0
    moved_at: float = 0.0
    """When the DLQ was empty."""
    finished: float = 0.0
    """When every comment had been triaged."""
    sampler: Sampler | None = None
    peak_vendor: int = 0
    deferred: int = 0
    triaged: int = 0
    copies: set[int] = field(default_factory=set)
    output: str = ""

    def series(self, name: str) -> tuple[list[float], list[float]]:
        assert self.sampler is not None
        return [t - self.started for t in self.sampler.times], self.sampler.values[name]

    def during(self, name: str) -> list[float]:
        assert self.sampler is not None
        return [v for t, v in zip(self.sampler.times, self.sampler.values[name], strict=True) if t <= self.finished]

    @property
    def rate(self) -> float:
        return 0.0 if self.moved_at <= self.started else self._moved / (self.moved_at - self.started)

    _moved: int = 0


def _fill(s: Session, p: Params, label: str) -> dict[str, str]:
    """Comments that every model call fails for, until each is dead-lettered. Returns comment -> page."""

    tag = uuid.uuid4().hex[:6]
    comments = {f"c{n}-{label}-{tag}": f"page-{label}-{n % p.pages}-{tag}" for n in range(p.messages)}
    dead_before = s.depth(LANE, dlq=True).visible
    # The outage: every model call fails, and (to fill the DLQ in seconds rather than minutes) the
    # consumer gives up after the first attempt; what lands in the DLQ is the consumer's own dead
    # letter, with its reason, exactly as after max receives. The lane's pause on a failing model
    # (LanePolicy.pause_on_failures, scenario 14) is off here: it would hold the comments in the lane
    # instead, which is the point of it, and leave this scenario no dead letters to redrive.
    s.configure_model(failure_rate=1.0, latency_ms=0)
    s.configure_lane(LANE, max_receives=1, pause_on_failures=None)
    statuses = fan_out(
        [
            lambda c=c, page=page: s.client.deliver(meta.page_comment(page, c, f"refund for {c}?")).status
            for c, page in comments.items()
        ],
        p.producers,
    )
    if any(code != 200 for code in statuses):
        raise RuntimeError(f"deliveries refused: {sorted(set(statuses))}")
    poll(lambda: s.depth(LANE, dlq=True).visible - dead_before >= p.messages, 120, interval=0.5)
    poll(lambda: s.lanes_empty(LANE), 30)
    lane = s.runtime.env.lane(LANE)
    s.configure_model(failure_rate=0.0, latency_ms=p.latency_ms)
    s.configure_lane(LANE, max_receives=lane.policy.max_receives)
    return comments


def _drain(s: Session, p: Params, label: str, comments: dict[str, str], paced: bool) -> Drain:
    drain = Drain(label)
    player = s.lane_view(LANE).player
    records_before = len(s.log.outcomes(lane=LANE))
    gauges = {
        "dlq": lambda: s.depth(LANE, dlq=True).visible,
        "lane depth": lambda: s.total_depth(LANE),
        "oldest age": lambda: s.depth(LANE).oldest_age_seconds,
        "batches in flight": lambda: player.stats.in_flight,
    }
    drain._moved = s.depth(LANE, dlq=True).visible
    with vendor_probe() as probe, Sampler(gauges, interval=0.1) as sampler:
        drain.sampler = sampler
        drain.started = time.time()
        drain.output = lanectl_redrive(s, LANE, p.rate) if paced else unpaced_redrive(s, LANE)
        drain.moved_at = poll(lambda: time.time() if s.depth(LANE, dlq=True).visible == 0 else None, 30) or 0.0
        if paced:
            # The CLI's first seconds are its own start-up; the move starts when the DLQ starts to fall.
            falling = [t for t, v in zip(sampler.times, sampler.values["dlq"], strict=True) if v < drain._moved]
            drain.started = falling[0] - 1 / p.rate if falling else drain.started

        def triaged() -> int:
            return sum(
                1
                for c, page in comments.items()
                if (item := s.stored_comment(page, c, meta.commenter(c))) is not None
                and item.get("label", "untriaged") != "untriaged"
            )

        poll(lambda: triaged() == len(comments), 120, interval=1.0)
        drain.finished = time.time()
        drain.triaged = triaged()
        drain.peak_vendor = probe.peak
        time.sleep(0.5)
    lines = s.log.outcomes(lane=LANE)[records_before:]
    drain.deferred = sum(1 for r in lines if r.outcome == "deferred")
    return drain


def run(h: Harness, p: Params = FULL) -> Result:
    result = Result(
        number=9,
        title="Paced recovery",
        question=f"{p.messages} dead-lettered comments are redriven once the model is back: what rate is achieved, "
        "and what does the lane see while it drains?",
        baseline="an unpaced redrive (receive, send, delete in a loop, as fast as the queues allow)",
        project_label=f"lanectl redrive --rate {p.rate}",
        baseline_label="unpaced",
    )
    started = time.monotonic()
    with h.session(cli=True) as s:
        paced_comments = _fill(s, p, "paced")
        reasons = {r.reason for r in s.log.outcomes(lane=LANE, outcome="dead_lettered")}
        paced = _drain(s, p, "paced", paced_comments, paced=True)
        unpaced_comments = _fill(s, p, "unpaced")
        unpaced = _drain(s, p, "unpaced", unpaced_comments, paced=False)
        age_alarm = s.alarm("EngagementLaneOldestMessageAge")
        alarm_fired = {
            d.label: any(
                state == "ALARM" and d.started <= at <= d.finished + 2 for at, _, state, _ in age_alarm.history
            )
            for d in (paced, unpaced)
        }
        objective = s.runtime.env.lane(LANE).policy.objective_seconds
        mapping = s.lane_view(LANE).player.state()
        mapping_max = mapping.max_concurrency
    for d in (paced, unpaced):
        d.copies = {1}
    result.figure(
        "messages in the DLQ",
        str(paced._moved),
        str(unpaced._moved),
        f"reasons: {', '.join(sorted(r for r in reasons if r))}",
    )
    result.figure("achieved redrive rate", f"{fmt(paced.rate)} msg/s (asked {p.rate})", f"{fmt(unpaced.rate)} msg/s")
    result.figure(
        "DLQ empty after", f"{fmt(paced.moved_at - paced.started)} s", f"{fmt(unpaced.moved_at - unpaced.started)} s"
    )
    result.figure(
        "all comments triaged after",
        f"{fmt(paced.finished - paced.started)} s",
        f"{fmt(unpaced.finished - unpaced.started)} s",
    )
    result.figure(
        "consumer batches in flight (mean / max)",
        f"{fmt(mean(paced.during('batches in flight')), 2)} / {fmt(max(paced.during('batches in flight')), 0)}",
        f"{fmt(mean(unpaced.during('batches in flight')), 2)} / {fmt(max(unpaced.during('batches in flight')), 0)}",
        f"mapping MaximumConcurrency {mapping_max}",
    )
    result.figure(
        "lane depth (max)", fmt(max(paced.during("lane depth")), 0), fmt(max(unpaced.during("lane depth")), 0)
    )
    result.figure(
        "oldest message in the lane (max)",
        f"{fmt(max(paced.during('oldest age')))} s",
        f"{fmt(max(unpaced.during('oldest age')))} s",
        f"objective {objective} s",
    )
    result.figure(
        "lane age alarm fired", "yes" if alarm_fired["paced"] else "no", "yes" if alarm_fired["unpaced"] else "no"
    )
    result.figure("model calls in progress (peak)", str(paced.peak_vendor), str(unpaced.peak_vendor))
    result.figure("deferrals while draining", str(paced.deferred), str(unpaced.deferred))
    result.figure(
        "comments triaged", f"{paced.triaged}/{len(paced_comments)}", f"{unpaced.triaged}/{len(unpaced_comments)}"
    )
    result.check(
        "the paced redrive keeps to its rate",
        0 < paced.rate <= p.rate * 1.1,
        f"{paced.rate:.1f} msg/s for a rate of {p.rate}",
    )
    result.check(
        "every redriven comment is triaged",
        paced.triaged == len(paced_comments) and unpaced.triaged == len(unpaced_comments),
        f"{paced.triaged}/{len(paced_comments)}, {unpaced.triaged}/{len(unpaced_comments)}",
    )
    result.check(
        "paced, the lane stays shallower than unpaced",
        max(paced.during("lane depth")) < max(unpaced.during("lane depth")),
        f"max depth {max(paced.during('lane depth')):.0f} vs {max(unpaced.during('lane depth')):.0f}",
    )
    result.headline = (
        f"{paced._moved} messages redriven at {paced.rate:.1f} msg/s (asked {p.rate}): lane depth at most "
        f"{max(paced.during('lane depth')):.0f}, {mean(paced.during('batches in flight')):.2f} batches in flight on "
        f"average; unpaced at {unpaced.rate:.0f} msg/s: depth {max(unpaced.during('lane depth')):.0f}, "
        f"{mean(unpaced.during('batches in flight')):.2f} in flight, oldest message "
        f"{max(unpaced.during('oldest age')):.0f} s"
    )
    result.data.update(
        rate=paced.rate,
        asked=p.rate,
        paced_depth=max(paced.during("lane depth")),
        unpaced_depth=max(unpaced.during("lane depth")),
        complete=paced.triaged == len(paced_comments) and unpaced.triaged == len(unpaced_comments),
    )
    result.method = [
        f"engagement lane (MaximumConcurrency {mapping_max}, batch {mapping.batch_size}, window "
        f"{mapping.window_seconds:g} s; llm budget 2); {p.messages} "
        f"comment webhooks from {p.pages} pages while every model call fails; the consumer dead-letters each with "
        "its reason (its max receives set to 1 during the outage so that the DLQ fills in seconds).",
        f"Model back (latency {p.latency_ms} ms), then `lanectl dlq redrive {LANE} --rate {p.rate}` as a "
        "subprocess; then a second outage and the unpaced loop. One runtime.",
        "Rates and depths are sampled every 0.1 s from the emulator's queues and the mapping's counters; the "
        "paced rate is timed from the DLQ's first fall (the CLI's start-up excluded).",
    ]
    result.caveats = [
        "On AWS the redrive is SQS's own message move task at MaxNumberOfMessagesPerSecond; the emulator lacks "
        "it, so the CLI's equivalent paced move runs here (same rate contract).",
        "Dead-lettered rows are marked failed; a redrive finishes them from `failed` (the consumer reopens "
        "failed and abandoned rows), so nothing is replayed twice.",
    ]
    if h.plot_dir is not None:
        from bench.scenarios import plots

        panels = []
        for name, label in (
            ("dlq", "DLQ depth"),
            ("lane depth", "lane depth"),
            ("batches in flight", "batches\nin flight"),
        ):
            panels.append((label, {"paced": paced.series(name), "unpaced": unpaced.series(name)}))
        result.plots.append(
            plots.timeseries(
                h.plot_dir / "s09_paced_recovery.png",
                f"Redriving {p.messages} dead letters: paced at {p.rate}/s vs unpaced",
                panels,
                xlabel="seconds since the redrive started",
            )
        )
    result.seconds = time.monotonic() - started
    return result
