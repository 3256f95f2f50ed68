"""6. Lost enqueue: the send to the lane fails after the delivery was logged, for N deliveries.

The fault is injected the way a bad deploy would cause it: the webhook door's configuration
(UpdateFunctionConfiguration) points the messages lane at a queue that does not exist, so each
delivery's log row is written and then its SendMessage fails. The door still answers 200 (the
row is the obligation). Then the configuration is put back.

- this pipeline: the sweeper (its own schedule) finds rows pending past the grace period and
  replays them to their lane;
- baseline, no sweeper: the same faulty deliveries with the sweeper switched off (its grace
  period set beyond the run): the queue was the only path, so nothing ever processes them.

Measured: messages stored (the messages task's items), each exactly once; time from the
delivery to its message being stored; the sweeper's replay counts from its own log lines;
consumer outcome lines per delivery.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field

from bench.scenarios.harness import Harness, sweeper_grace
from bench.scenarios.measure import fmt, percentile
from bench.scenarios.result import Result
from ops.drive import RecordLine, Session, poll
from ops.drive import meta_payloads as meta

LANE = "messages"


@dataclass(frozen=True)
class Params:
    lost: int = 20
    grace_seconds: float | None = None
    """None: the environment's own grace period."""
    recovery_timeout: float = 60.0
    extra_wait: float = 5.0
    """The baseline is watched for as long as recovery took, plus this."""


FULL = Params()
QUICK = Params(lost=6, grace_seconds=2.0, recovery_timeout=30.0, extra_wait=1.0)


@dataclass
class Phase:
    label: str
    sent: dict[tuple[str, str], float] = field(default_factory=dict)
    statuses: list[int] = field(default_factory=list)
    stored: dict[tuple[str, str], float] = field(default_factory=dict)
    copies: dict[tuple[str, str], int] = field(default_factory=dict)

    @property
    def recovery(self) -> list[float]:
        return [self.stored[k] - t for k, t in self.sent.items() if k in self.stored]


def _broken_door(saved: dict[str, str]) -> Callable[[dict[str, str]], None]:
    """The door's configuration with the messages lane pointing at a queue that does not exist."""

    def change(variables: dict[str, str]) -> None:
        saved["LANE_QUEUES"] = variables["LANE_QUEUES"]
        queues = json.loads(variables["LANE_QUEUES"])
        queues[LANE] = queues[LANE] + "-does-not-exist"
        variables["LANE_QUEUES"] = json.dumps(queues)

    return change


def _deliver_lost(s: Session, p: Params, label: str, grace: float | None) -> Phase:
    """Break the door (and set the sweeper's grace, in the same change), deliver, restore the door."""

    tag = uuid.uuid4().hex[:6]
    phase = Phase(label)
    saved: dict[str, str] = {}
    changes = {"ingress": _broken_door(saved)}
    if grace is not None:
        changes["sweeper"] = sweeper_grace(grace)
    s.update_environments(changes)
    try:
        for n in range(p.lost):
            waba, wamid = f"waba-{label}-{n % 4}-{tag}", f"wamid.{label}.{tag}.{n}"
            at = time.time()
            phase.statuses.append(s.client.deliver(meta.whatsapp_message(waba, wamid, f"where is parcel {n}?")).status)
            phase.sent[(waba, wamid)] = at
    finally:
        s.update_environment("ingress", lambda variables: variables.update(saved))
    return phase


def _read(s: Session, phase: Phase) -> None:
    for waba, wamid in phase.sent:
        # One key per message: a second copy could only have overwritten it, which the
        # message's conditional put refuses, so a copy is counted by the stored item itself.
        item = s.stored_message(waba, wamid, meta.CUSTOMER)
        phase.copies[(waba, wamid)] = int(item is not None)
        if item is not None:
            phase.stored[(waba, wamid)] = float(item["stored_at"])


def _enqueue_failures(s: Session, marker: str) -> int:
    return len(
        s.log.lines(lambda _f, line: line.get("outcome") == "enqueue_failed" and marker in str(line.get("tenant")))
    )


def _replays(s: Session, after: float) -> int:
    from ops.drive.log_lines import RECEIVED_AT

    return sum(
        int(line.get("summary", {}).get("webhook", {}).get("replayed", 0))
        for _, line in s.log.lines(lambda _f, p: p.get("message") == "sweep finished")
        if line[RECEIVED_AT] >= after
    )


def run(h: Harness, p: Params = FULL) -> Result:
    result = Result(
        number=6,
        title="Lost enqueue",
        question=f"{p.lost} deliveries are logged but their send to the lane fails: are they all processed, "
        "once, and how soon?",
        baseline="the same faults with no sweeper (the queue as the only path)",
        project_label="sweeper",
        baseline_label="no sweeper",
    )
    started = time.monotonic()
    with h.session() as s:
        env = s.runtime.env
        grace = p.grace_seconds if p.grace_seconds is not None else float(env.sweeper.settings.grace_seconds)
        # This pipeline first: the sweeper on.
        sweep_from = time.time()
        ours = _deliver_lost(s, p, "ours", p.grace_seconds)
        enqueue_failures = _enqueue_failures(s, "-ours-")
        poll(lambda: (_read(s, ours), len(ours.stored) == len(ours.sent))[1], p.recovery_timeout, interval=0.5)

        def done_lines() -> list[RecordLine]:
            return [r for r in s.log.outcomes(lane=LANE, outcome="done") if "-ours-" in r.tenant]

        # A consumer writes its outcome lines once the whole batch has settled, after the commit
        # that stored the message: give the last batch time to finish before counting them.
        poll(lambda: len(done_lines()) >= len(ours.sent), 10, interval=0.2)
        done = done_lines()
        replayed = _replays(s, sweep_from)
        rows = [r for r in s.scan("WebhookTableName") if "-ours-" in str(r.get("tenant", ""))]
        # The baseline: the sweeper switched off, the same fault, as long again as recovery took.
        waited = max(ours.recovery, default=grace) + p.extra_wait
        naive = _deliver_lost(s, p, "naive", 10**7)
        time.sleep(waited)
        naive_failures = _enqueue_failures(s, "-naive-")
        _read(s, naive)
        naive_rows = [r for r in s.scan("WebhookTableName") if "-naive-" in str(r.get("tenant", ""))]
    pending = sum(1 for r in naive_rows if r.get("status") == "queued")
    once = all(c == 1 for c in ours.copies.values()) and len(done) == len(ours.sent)
    result.figure(
        "webhooks answered 200", f"{ours.statuses.count(200)}/{p.lost}", f"{naive.statuses.count(200)}/{p.lost}"
    )
    result.figure("enqueue failures logged by the door", str(enqueue_failures), str(naive_failures))
    result.figure(
        "messages processed",
        f"{len(ours.stored)}/{p.lost}",
        f"{len(naive.stored)}/{p.lost} after {waited:.0f} s",
    )
    result.figure(
        "stored copies per message",
        "/".join(sorted({str(c) for c in ours.copies.values()})),
        "/".join(sorted({str(c) for c in naive.copies.values()})),
    )
    result.figure("consumer 'done' lines for those deliveries", str(len(done)), "0")
    result.figure("sweeper replays", str(replayed), "0 (off)")
    result.figure(
        "delivery to stored (p50 / max)",
        f"{fmt(percentile(ours.recovery, 50))} / {fmt(max(ours.recovery, default=float('nan')))} s",
        "never",
    )
    result.figure(
        "log rows still pending at the end",
        str(sum(1 for r in rows if r.get("status") == "queued")),
        f"{pending} (the obligation is kept, nobody acts on it)",
    )
    result.check("the door answered 200 to every delivery", ours.statuses.count(200) == p.lost, f"{ours.statuses}")
    result.check(
        "every lost delivery is processed, exactly once",
        len(ours.stored) == p.lost and once,
        f"{len(ours.stored)}/{p.lost} stored, copies {sorted(set(ours.copies.values()))}, {len(done)} done",
    )
    result.check(
        "without the sweeper none of them is processed",
        len(naive.stored) == 0 and pending == p.lost,
        f"{len(naive.stored)} stored, {pending} rows pending after {waited:.0f} s",
    )
    result.headline = (
        f"{len(ours.stored)}/{p.lost} lost deliveries processed exactly once, recovered within "
        f"{fmt(max(ours.recovery, default=float('nan')))} s by {replayed} sweeper replays; "
        f"{len(naive.stored)}/{p.lost} without the sweeper"
    )
    result.data.update(stored=len(ours.stored), once=once, naive_stored=len(naive.stored), pending=pending, lost=p.lost)
    policy = env.sweeper.settings
    result.method = [
        f"{p.lost} signed WhatsApp message webhooks while the door's LANE_QUEUES names a missing queue for the "
        "messages lane (UpdateFunctionConfiguration), then the configuration restored.",
        f"Sweeper: every {env.sweeper.period_seconds} s, grace {grace:g} s"
        + (" (shortened for the fast test)" if p.grace_seconds is not None else "")
        + f", patience {policy.patience_seconds} s, {policy.max_replays} replays before abandoning.",
        "Baseline: the sweeper's grace period set beyond the run (switched off), the same fault, observed for as "
        "long as recovery took plus a few seconds.",
    ]
    result.caveats = [
        "Recovery time is the grace period plus up to one sweeper period plus the lane's wait; in production "
        "those are minutes (grace 120 s, schedule every 2 min), here seconds.",
    ]
    if h.plot_dir is not None:
        from bench.scenarios import plots

        result.plots.append(
            plots.ecdf(
                h.plot_dir / "s06_lost_enqueue_recovery.png",
                "Lost enqueues: delivery to message stored, via the sweeper",
                {"sweeper": ours.recovery},
                xlabel="seconds from the webhook to the message stored",
                markers={"grace period": grace},
            )
        )
    result.seconds = time.monotonic() - started
    return result
