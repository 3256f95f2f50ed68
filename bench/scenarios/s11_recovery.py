"""11. Recovery at the door's rate: SQS refuses every send for T seconds while deliveries keep coming.

The fault is injected the way s06 injects one, but on every sender at once: the webhook door's,
the jobs API's and the sweeper's configuration (UpdateFunctionConfiguration) point the messages and
bulk lanes at queues that do not exist. For T seconds signed WhatsApp deliveries arrive at a steady
rate, and import jobs at a lower one; every row is written, its send fails, and it is marked for
the sweeper. The sweeper's own replays fail too, so it gets nowhere until SQS "returns": the
configurations are put back. Deliveries keep arriving at the same rate for T more seconds.

Measured: when each lost delivery was processed (its consumer's `done` line) against when SQS
returned; the sweeper's replays from its own lines (rows, and the seconds each sweep took); rows
that expired unprocessed (the sweeper's `expired` count); the jobs' final status.

Compared with the sweeper this replaced, whose replay rate is arithmetic, not a run: it read the
oldest `rows_per_run` (200) rows a run and sent them one SendMessage each, so it replayed at most
200 rows a period: 40 rows a second locally (every 5 s), 1.7 in production (every 120 s).
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field

from bench.scenarios.harness import Harness, fan_out, sweeper_grace
from bench.scenarios.measure import fmt, percentile
from bench.scenarios.result import Result
from ops.drive import Session, poll
from ops.drive import meta_payloads as meta
from ops.drive.log_lines import RECEIVED_AT

LANES = ("messages", "bulk")
OLD_ROWS_PER_RUN = 200
"""The replaced sweeper's ceiling: this many rows a period, whatever the backlog."""


@dataclass(frozen=True)
class Params:
    rate: float = 30.0
    """Deliveries a second during the outage. The local runtime's consumers hold about 45 a second
    (door, consumers, sweeper and emulator share one interpreter): recovering T seconds of this rate
    within T seconds, beside the live traffic, needs their capacity less `after_rate` above it."""
    outage_seconds: float = 60.0
    after_rate: float = 5.0
    """Deliveries a second after SQS returns, for as long as the outage lasted: live traffic the
    consumers serve beside the recovery."""
    jobs_every: float = 1.0
    """One import job this often during the outage."""
    grace_seconds: float | None = None
    """None: the environment's own grace period."""
    producers: int = 4


FULL = Params()
QUICK = Params(rate=8.0, outage_seconds=15.0, after_rate=4.0, jobs_every=3.0, grace_seconds=2.0)


@dataclass
class Traffic:
    sent: dict[str, float] = field(default_factory=dict)
    """Tenant (one per delivery) -> when it was sent."""
    statuses: list[int] = field(default_factory=list)
    jobs: list[str] = field(default_factory=list)
    job_statuses: list[int] = field(default_factory=list)


def _broken(saved: dict[str, str]) -> Callable[[dict[str, str]], None]:
    def change(variables: dict[str, str]) -> None:
        saved["LANE_QUEUES"] = variables["LANE_QUEUES"]
        queues = json.loads(variables["LANE_QUEUES"])
        # Each function holds only the lanes it sends to (the door, the webhook lanes' alone).
        for lane in LANES:
            if lane in queues:
                queues[lane] = queues[lane] + "-does-not-exist"
        variables["LANE_QUEUES"] = json.dumps(queues)

    return change


def _restore(kept: dict[str, str]) -> Callable[[dict[str, str]], None]:
    return lambda variables: variables.update(kept)


def _both(
    first: Callable[[dict[str, str]], None], then: Callable[[dict[str, str]], None]
) -> Callable[[dict[str, str]], None]:
    def change(variables: dict[str, str]) -> None:
        first(variables)
        then(variables)

    return change


def _deliver(s: Session, p: Params, tag: str, phase: str, traffic: Traffic, rate: float, jobs: bool) -> None:
    """`rate` deliveries a second for `outage_seconds`, paced from the start (a late one is sent at
    once, not skipped), and a job every `jobs_every` seconds when asked."""
    count = int(rate * p.outage_seconds)
    started = time.monotonic()

    def one(n: int) -> Callable[[], None]:
        def send() -> None:
            delay = started + n / rate - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            tenant = f"waba-{phase}-{tag}-{n}"
            at = time.time()
            status = s.client.deliver(meta.whatsapp_message(tenant, f"wamid.{tag}.{phase}.{n}", f"order {n}?")).status
            traffic.statuses.append(status)
            traffic.sent[tenant] = at
            if jobs and n % max(1, int(rate * p.jobs_every)) == 0:
                rows = [{"id": f"row-{n}"}]
                payload = {"import_id": f"imp-{tag}", "page": n, "rows": rows}
                response = s.client.submit_job(
                    lane="bulk", kind="import.page", tenant=f"importer-{tag}", payload=payload
                )
                traffic.job_statuses.append(response.status)
                if response.status == 202:
                    traffic.jobs.append(json.loads(response.body)["id"])

        return send

    fan_out([one(n) for n in range(count)], p.producers)


def _sweeps(s: Session, after: float) -> list[dict]:
    return [
        {**line.get("summary", {}), "at": line[RECEIVED_AT]}
        for _, line in s.log.lines(lambda _f, q: q.get("message") == "sweep finished")
        if line[RECEIVED_AT] >= after
    ]


@dataclass
class Measured:
    period: float = 0.0
    grace: float = 0.0
    page_rows: int = 0
    run_seconds: float = 0.0
    lost: Traffic = field(default_factory=Traffic)
    after: Traffic = field(default_factory=Traffic)
    returned: float = 0.0
    processed: dict[str, float] = field(default_factory=dict)
    jobs_done: list[str] = field(default_factory=list)
    sweeps: list[dict] = field(default_factory=list)
    unsent: int = 0
    replay_stamps: list[float] = field(default_factory=list)
    pending: int = 0


def _measure(h: Harness, p: Params) -> Measured:
    m = Measured()
    tag = uuid.uuid4().hex[:6]
    with h.session() as s:
        env = s.runtime.env
        m.period, m.page_rows = float(env.sweeper.period_seconds), env.sweeper.settings.page_rows
        m.run_seconds = env.sweeper.settings.run_seconds
        m.grace = p.grace_seconds if p.grace_seconds is not None else float(env.sweeper.settings.grace_seconds)
        saved: dict[str, dict[str, str]] = {"ingress": {}, "jobs": {}, "sweeper": {}}
        changes = {role: _broken(saved[role]) for role in saved}
        if p.grace_seconds is not None:
            changes["sweeper"] = _both(changes["sweeper"], sweeper_grace(m.grace))
        outage_began = time.time()
        s.update_environments(changes)
        try:
            _deliver(s, p, tag, "lost", m.lost, p.rate, jobs=True)
        finally:
            s.update_environments({role: _restore(kept) for role, kept in saved.items()})
        m.returned = time.time()
        _deliver(s, p, tag, "live", m.after, p.after_rate, jobs=False)

        def done_at() -> dict[str, float]:
            found: dict[str, float] = {}
            for record in s.log.outcomes(lane="messages", outcome="done"):
                if record.tenant in m.lost.sent:
                    found.setdefault(record.tenant, record.at)
            return found

        poll(lambda: len(done_at()) >= len(m.lost.sent), max(60.0, 4 * p.outage_seconds), interval=0.5)
        m.processed = done_at()

        def jobs_done() -> list[str]:
            rows = {r["id"]: r for r in s.scan("JobsTableName") if r.get("id") in set(m.lost.jobs)}
            return [job for job in m.lost.jobs if rows.get(job, {}).get("status") == "done"]

        poll(lambda: len(jobs_done()) >= len(m.lost.jobs), 60.0, interval=0.5)
        m.jobs_done = jobs_done()
        m.sweeps = _sweeps(s, outage_began)
        marker = f"-lost-{tag}-"
        m.unsent = len(
            s.log.lines(lambda _f, q: q.get("outcome") == "enqueue_failed" and marker in str(q.get("tenant")))
        )
        m.replay_stamps = [
            line[RECEIVED_AT]
            for _, line in s.log.lines(lambda _f, q: q.get("message") == "replayed pending rows")
            if line[RECEIVED_AT] >= m.returned
        ]
        rows = [r for r in s.scan("WebhookTableName") if marker in str(r.get("tenant", ""))]
        m.pending = sum(1 for r in rows if r.get("pending_shard"))
    return m


def _count(sweeps: list[dict], source: str, name: str) -> int:
    return sum(int(sweep.get(source, {}).get(name, 0)) for sweep in sweeps)


def run(h: Harness, p: Params = FULL) -> Result:
    result = Result(
        number=11,
        title="Recovery at the door's rate",
        question=f"SQS refuses every send for {p.outage_seconds:g} s while {p.rate:g} deliveries a second arrive: "
        "is every lost delivery processed within as long again after SQS returns, and does nothing expire?",
        baseline=f"the replaced sweeper: the oldest {OLD_ROWS_PER_RUN} rows a run, one SendMessage each (arithmetic)",
        project_label="this sweeper",
        baseline_label="replaced sweeper",
    )
    started = time.monotonic()
    m = _measure(h, p)
    recovery = [at - m.returned for at in m.processed.values()]
    replayed = _count(m.sweeps, "webhook", "replayed")
    expired = _count(m.sweeps, "webhook", "expired") + _count(m.sweeps, "job", "expired")
    working = [sweep for sweep in m.sweeps if int(sweep.get("webhook", {}).get("replayed", 0)) > 0]
    working_seconds = sum(float(sweep.get("elapsed_seconds", 0.0)) for sweep in working)
    replay_rate = replayed / working_seconds if working_seconds > 0 else float("nan")
    span = max(m.replay_stamps) - min(m.replay_stamps) if m.replay_stamps else 0.0
    mark_rate = m.unsent / p.outage_seconds
    old_rate = OLD_ROWS_PER_RUN / m.period
    recovered_within = max(recovery, default=float("inf"))
    lost, jobs = len(m.lost.sent), len(m.lost.jobs)

    answered = m.lost.statuses.count(200) + m.after.statuses.count(200)
    result.figure("deliveries answered 200", f"{answered}/{len(m.lost.statuses) + len(m.after.statuses)}")
    result.figure("lost deliveries (send failed, row marked)", f"{m.unsent} at {mark_rate:.1f}/s")
    result.figure(
        "replay rate while replaying (rows/s)",
        f"{fmt(replay_rate)} ({replayed} rows in {working_seconds:.1f} s of {len(working)} sweeps)",
        f"{old_rate:g} at most ({OLD_ROWS_PER_RUN} rows every {m.period:g} s)",
    )
    result.figure("first to last replay line after SQS returned", f"{span:.1f} s")
    result.figure(
        "SQS returned to last lost delivery processed",
        f"{fmt(recovered_within)} s (p50 {fmt(percentile(recovery, 50))} s)",
        f"{m.grace + lost / old_rate:.0f} s at best (grace + rows / rate)",
    )
    result.figure("lost deliveries processed", f"{len(m.processed)}/{lost}")
    result.figure(
        "jobs whose send failed, done", f"{len(m.jobs_done)}/{jobs} ({_count(m.sweeps, 'job', 'replayed')} replayed)"
    )
    result.figure("rows expired unprocessed", str(expired))
    result.figure("lost rows still in the pending index at the end", str(m.pending))
    result.check(
        "every lost delivery is processed",
        len(m.processed) == lost == m.unsent,
        f"{len(m.processed)} processed of {lost} sent, {m.unsent} marked",
    )
    result.check("every job whose send failed is done", len(m.jobs_done) == jobs > 0, f"{len(m.jobs_done)}/{jobs}")
    result.check("nothing expired unprocessed", expired == 0, f"{expired} expired")
    result.check(
        "lost rows are replayed at least as fast as the door marked them",
        replay_rate >= mark_rate,
        f"{fmt(replay_rate)} rows/s replayed, {mark_rate:.1f} rows/s marked",
    )
    result.check(
        f"an outage of {p.outage_seconds:g} s is recovered within {p.outage_seconds:g} s of SQS returning",
        recovered_within <= p.outage_seconds,
        f"{fmt(recovered_within)} s",
    )
    result.headline = (
        f"{len(m.processed)}/{lost} deliveries lost over a {p.outage_seconds:g} s SQS outage processed "
        f"within {fmt(recovered_within)} s of SQS returning; replayed at {fmt(replay_rate)} rows/s "
        f"(the replaced sweeper: at most {old_rate:g}); {expired} expired"
    )
    result.data.update(
        processed=len(m.processed),
        lost=lost,
        unsent=m.unsent,
        jobs=jobs,
        jobs_done=len(m.jobs_done),
        expired=expired,
        replay_rate=replay_rate,
        mark_rate=mark_rate,
        recovered_within=recovered_within,
        outage_seconds=p.outage_seconds,
        old_rate=old_rate,
    )
    result.method = [
        f"{p.rate:g} signed WhatsApp message webhooks a second from {p.producers} producers, one business each, "
        f"for {p.outage_seconds:g} s while the door's, the jobs API's and the sweeper's LANE_QUEUES name missing "
        f"queues for {', '.join(LANES)} (UpdateFunctionConfiguration); an import job every {p.jobs_every:g} s. "
        f"Then the configurations restored and {p.outage_seconds:g} s more of deliveries at {p.after_rate:g} a second.",
        f"Sweeper: every {m.period:g} s, grace {m.grace:g} s"
        + (" (shortened for the fast test)" if p.grace_seconds is not None else "")
        + f", pages of {m.page_rows} rows, for {m.run_seconds:g} s a run.",
        "Replay rate: rows the sweeps replayed over the seconds those sweeps ran (their own `elapsed_seconds`). "
        "Recovery: from SQS returning to each lost delivery's consumer `done` line.",
    ]
    result.caveats = [
        "The replaced sweeper's figures are its ceiling by arithmetic, not a run of it.",
        "Locally one interpreter runs the door, the consumers, the sweeper and the emulator, whose DynamoDB "
        "calls take one lock: the replay rate here is far below what Lambda and DynamoDB allow.",
    ]
    result.seconds = time.monotonic() - started
    return result
