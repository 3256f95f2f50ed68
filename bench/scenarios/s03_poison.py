"""3. Poison message: one comment-triage job the model rejects every time, among normal jobs.

The local model (the fake of Bedrock's Converse) answers 500 to any prompt containing a marker
(its `rejects` setting), the shape of a poison message: one request that fails every time while
everything around it succeeds. Producers post comment-triage jobs at a steady rate through the
jobs API; one of them carries the marker. Three runs in one runtime:

- control: the same traffic without the poison job;
- this pipeline: the lane's retry policy (capped exponential backoff with full jitter through
  the message's visibility) and its max receives, after which the consumer dead-letters the job
  with its reason and the DLQ alarm fires;
- baseline, a naive consumer: retry at once and never give up (max receives and the queue's
  redrive limit raised to 1000, backoff 0), for the same length of time.

Measured from the consumer's per-record log lines and the tasks' `triaged_at`: attempts spent on
the poison job, the normal jobs' wait beside it, when it was dead-lettered and when the alarm
fired (the runtime's alarm history).
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from dataclasses import dataclass, field

from bench.scenarios.harness import Harness
from bench.scenarios.measure import fmt, percentile
from bench.scenarios.result import Result
from ops.drive import Session, poll
from pipeline.settings.lane_policy import RetryPolicy

LANE = "engagement"
AUTHOR = "user-1"
"""Who wrote the comments the triage jobs carry."""
MARKER = "POISON-PILL"
ATTEMPTED = ("retried", "dead_lettered", "done")


@dataclass(frozen=True)
class Params:
    per_second: float = 4.0
    seconds: float = 15.0
    poison_at: float = 1.0
    service_ms: int = 100
    tenants: int = 6
    retry: tuple[float, float] | None = None
    naive_timeout: float = 45.0
    control: bool = True
    """A run without the poison, for the others' wait; the fast test skips it."""
    window_seconds: int | None = None
    """The mapping's batching window; None keeps the lane's. The fast test sets 0 so that
    attempts follow each other as fast as the backoff allows."""
    """(base, cap) of the retry backoff; None keeps the lane's. The fast test shortens it."""


FULL = Params()
QUICK = Params(seconds=3.0, per_second=3.0, retry=(0.1, 0.3), control=False, window_seconds=0)


@dataclass
class Phase:
    label: str
    started: float
    sent: dict[str, float] = field(default_factory=dict)
    """comment id -> when its job was posted"""
    triaged: dict[str, float] = field(default_factory=dict)
    poison_job: str | None = None
    poison_sent: float = 0.0
    attempts: int = 0
    dead_lettered_at: float | None = None
    alarm_at: float | None = None
    shed: int = 0

    @property
    def waits(self) -> list[float]:
        return [self.triaged[c] - t for c, t in self.sent.items() if c in self.triaged]


def _phase(
    s: Session, p: Params, label: str, *, poison: bool, observe_for: float = 0.0, until_attempts: int = 0
) -> Phase:
    tag = uuid.uuid4().hex[:6]
    tenants = [f"shop-{label}-{n}-{tag}" for n in range(p.tenants)]
    phase = Phase(label=label, started=time.time())
    stop = threading.Event()

    def post(tenant: str, comment: str, text: str) -> str | None:
        at = time.time()
        response = s.client.submit_job(
            lane=LANE,
            kind="comment.triage",
            tenant=tenant,
            payload={"comment_id": comment, "message": text, "post_id": "post-1", "from": {"id": AUTHOR}},
        )
        if response.status != 202:
            phase.shed += 1
            return None
        if MARKER not in text:
            phase.sent[f"{tenant}#{comment}"] = at
        return str(response.json()["id"])

    def producer() -> None:
        n = 0
        next_at = time.monotonic()
        ends = next_at + p.seconds
        while not stop.is_set() and time.monotonic() < ends:
            tenant = tenants[n % len(tenants)]
            post(tenant, f"c{n}-{tag}", f"when do you open on day {n}?")
            n += 1
            next_at += 1 / p.per_second
            time.sleep(max(0.0, next_at - time.monotonic()))

    thread = threading.Thread(target=producer, name="normal-jobs", daemon=True)
    thread.start()
    if poison:
        time.sleep(p.poison_at)
        phase.poison_sent = time.time()
        phase.poison_job = post(f"shop-{label}-poisoned-{tag}", f"poison-{tag}", f"my order {MARKER} is late")
    thread.join()
    poll(lambda: len(s.log.finished(set(tenants), LANE)) >= len(phase.sent), 40)
    if poison and observe_for:
        time.sleep(max(0.0, phase.poison_sent + observe_for - time.time()))
    if poison and until_attempts and phase.poison_job:
        ids = {phase.poison_job}
        poll(
            lambda: sum(1 for r in s.log.outcomes(lane=LANE, ids=ids) if r.outcome in ATTEMPTED) >= until_attempts,
            p.naive_timeout,
        )
    for key in phase.sent:
        tenant, comment = key.split("#", 1)
        item = s.stored_comment(tenant, comment, AUTHOR)
        if item is not None and item.get("label", "untriaged") != "untriaged":
            phase.triaged[key] = float(item["triaged_at"])
    if phase.poison_job:
        lines = s.log.outcomes(lane=LANE, ids={phase.poison_job})
        phase.attempts = sum(1 for r in lines if r.outcome in ATTEMPTED)
        dead = [r.at for r in lines if r.outcome == "dead_lettered"]
        phase.dead_lettered_at = min(dead) if dead else None
    return phase


def run(h: Harness, p: Params = FULL) -> Result:
    result = Result(
        number=3,
        title="Poison message",
        question="One job fails every time among normal jobs: how many attempts does it cost, how much does it "
        "delay the others, and when does someone hear about it?",
        baseline="a naive consumer that retries at once and never gives up (no backoff, no receive limit)",
        project_label="backoff + max receives + DLQ",
        baseline_label="naive retry",
    )
    started = time.monotonic()
    with h.session() as s:
        retry = {} if p.retry is None else {"retry": RetryPolicy(*p.retry)}
        if p.window_seconds is not None:
            s.set_mapping(LANE, window_seconds=p.window_seconds)
        s.configure_model(latency_ms=p.service_ms, rejects=MARKER)
        if retry:
            s.configure_lane(LANE, **retry)
        lane = json.loads(s.host(LANE).config.environment["LANE"])
        control = _phase(s, p, "control", poison=False) if p.control else Phase("control", time.time())
        ours = _phase(s, p, "ours", poison=True)
        # When the copy reached the DLQ (its sent time there): the consumer writes its outcome lines
        # when the whole batch has settled, later than the send to the DLQ the alarm sees. The DLQ
        # is empty before this phase, so its oldest message is the poison job.
        ours.dead_lettered_at = poll(lambda: s.oldest_dead_letter_sent(LANE), 30)
        if ours.poison_job:
            lines = s.log.outcomes(lane=LANE, ids={ours.poison_job})
            ours.attempts = sum(1 for r in lines if r.outcome in ATTEMPTED)
        ours.alarm_at = poll(lambda: s.alarm_fired_at("EngagementLaneDeadLetters", ours.poison_sent), 20)
        dlq_depth = s.depth(LANE, dlq=True).visible
        # The naive consumer: retry immediately, forever.
        dlq_arn = s.outputs["EngagementDlqArn"]
        previous = s.set_queue_attributes(
            LANE, {"RedrivePolicy": json.dumps({"deadLetterTargetArn": dlq_arn, "maxReceiveCount": 1000})}
        )
        # Nor does it pause itself when the one job's immediate retries make most of its model calls
        # fail (LanePolicy.pause_on_failures, scenario 14): that would stop it, not the poison.
        s.configure_lane(LANE, max_receives=1000, retry=RetryPolicy(0.001, 0.001), pause_on_failures=None)
        ours_window = (ours.dead_lettered_at or time.time()) - ours.poison_sent
        max_receives = int(lane["max_receives"])
        naive = _phase(s, p, "naive", poison=True, observe_for=ours_window, until_attempts=max_receives + 1)
        naive_window = time.time() - naive.poison_sent
        naive_dead = s.depth(LANE, dlq=True).visible - dlq_depth
        # Clean up as on-call would: Bedrock fixes the fault; the naive loop then succeeds.
        s.configure_model(rejects="")
        poll(lambda: s.lanes_empty(LANE), 20)
        s.set_queue_attributes(LANE, previous)
    waits = {"control": control.waits, "ours": ours.waits, "naive": naive.waits}
    result.figure(
        "attempts spent on the poison job", str(ours.attempts), f"{naive.attempts} in {naive_window:.0f} s, still going"
    )
    result.figure("lane's max receives", str(max_receives), "none (1000)")
    result.figure(
        "poison dead-lettered after",
        f"{fmt(ours.dead_lettered_at - ours.poison_sent)} s" if ours.dead_lettered_at else "never",
        f"never ({naive_dead} in the DLQ)",
    )
    result.figure(
        "DLQ alarm fired after",
        f"{fmt(ours.alarm_at - ours.poison_sent)} s" if ours.alarm_at else "never",
        "never",
        "from the poison job's POST",
    )
    result.figure(
        "normal jobs' wait p50 / p99",
        f"{fmt(percentile(ours.waits, 50), 2)} / {fmt(percentile(ours.waits, 99), 2)} s",
        f"{fmt(percentile(naive.waits, 50), 2)} / {fmt(percentile(naive.waits, 99), 2)} s",
        f"control without poison: {fmt(percentile(control.waits, 50), 2)} / {fmt(percentile(control.waits, 99), 2)} s",
    )
    result.figure(
        "normal jobs triaged",
        f"{len(ours.triaged)}/{len(ours.sent)}",
        f"{len(naive.triaged)}/{len(naive.sent)}",
    )
    result.check(
        "attempts on the poison job stay within max receives",
        0 < ours.attempts <= max_receives,
        f"{ours.attempts} <= {max_receives}",
    )
    result.check(
        "the poison job is dead-lettered and the DLQ alarm fires",
        ours.dead_lettered_at is not None and ours.alarm_at is not None,
        f"DLQ after {fmt((ours.dead_lettered_at or 0) - ours.poison_sent)} s, alarm after "
        f"{fmt((ours.alarm_at or 0) - ours.poison_sent)} s",
    )
    result.check(
        "the naive consumer keeps going past max receives and raises nothing",
        naive.attempts > max_receives and naive_dead == 0,
        f"{naive.attempts} attempts in {naive_window:.0f} s, {naive_dead} dead-lettered",
    )
    result.check(
        "every normal job is triaged in all three runs",
        all(len(ph.triaged) == len(ph.sent) for ph in (control, ours, naive)),
        ", ".join(f"{len(ph.triaged)}/{len(ph.sent)}" for ph in (control, ours, naive)),
    )
    added = percentile(ours.waits, 99) - percentile(control.waits, 99)
    result.headline = (
        f"{ours.attempts} attempts (max receives {max_receives}), dead-lettered after "
        f"{fmt((ours.dead_lettered_at or 0) - ours.poison_sent)} s, alarm after "
        f"{fmt((ours.alarm_at or 0) - ours.poison_sent)} s; the naive consumer made {naive.attempts} attempts in "
        f"{naive_window:.0f} s and raised nothing"
        + (f"; p99 wait of the other jobs {added:+.2f} s vs no poison" if p.control else "")
    )
    result.data.update(
        attempts=ours.attempts,
        naive_attempts=naive.attempts,
        max_receives=max_receives,
        dead_lettered=ours.dead_lettered_at is not None,
        alarm=ours.alarm_at is not None,
        naive_dead=naive_dead,
        complete=all(len(ph.triaged) == len(ph.sent) for ph in (control, ours, naive)),
    )
    result.method = [
        f"engagement lane (MaximumConcurrency 3, batch {lane['batch_size']}, retry base "
        f"{lane['retry']['base_seconds']} s capped at {lane['retry']['cap_seconds']} s, max receives {max_receives}); "
        f"model latency {p.service_ms} ms.",
        f"Normal comment-triage jobs at {p.per_second:g}/s for {p.seconds:g} s from {p.tenants} tenants; the poison "
        f"job posted {p.poison_at:g} s in. Control, then this pipeline, then the naive consumer, one runtime.",
        "Naive consumer = the same code with max receives 1000, backoff 0 and the queue's redrive limit 1000 "
        "(SetQueueAttributes), for the same traffic and time; afterwards the model is fixed and it completes.",
    ]
    result.caveats = [
        "The poison fails inside the task, so each attempt costs one model call and one record slot. A poison "
        "that crashes the whole runtime process (the Celery prefork case) cannot be shown: the local runtime "
        "runs every function in one process.",
        "Alarm periods are 10 s locally and evaluated on sliding windows every second, so 'alarm after' is "
        "mostly the backoff schedule; on AWS add up to a minute for the metric period.",
    ]
    if h.plot_dir is not None:
        from bench.scenarios import plots

        result.plots.append(
            plots.ecdf(
                h.plot_dir / "s03_poison_waits.png",
                "Normal jobs' wait beside a poison job",
                {
                    "no poison (control)": waits["control"],
                    "poison, this pipeline": waits["ours"],
                    "poison, naive retry": waits["naive"],
                },
                xlabel="seconds from POST /jobs to triage start",
            )
        )
    result.seconds = time.monotonic() - started
    return result
