"""8. Duplicate storm: every delivery arrives five times, some of the copies at the same moment.

Meta retries a delivery it is unsure about, byte for byte; producers retry a job submission they
timed out on. Here each of `deliveries` WhatsApp webhooks is sent five times (two one after the
other, three at once from parallel connections), and each of `jobs` comment-triage jobs is
posted five times with the same Idempotency-Key (three of them at once).

- this pipeline: the door keys the log row by the body's digest (a redelivery finds the row; a
  redelivery of a still-pending row is sent again, harmlessly), the jobs API returns the job an
  idempotency key already made, and the consumer's done-mark commits with the effect;
- baseline: a pipeline without any of that, for which every accepted copy is a unit of work and
  an effect: the number of accepted copies, counted.

Measured: log rows and job ids created, queue messages sent (the door's own log lines), consumer
outcomes, model calls per comment at the local model, and stored items per message/comment.
"""

from __future__ import annotations

import time
import uuid
from collections import Counter
from dataclasses import dataclass

from bench.scenarios.harness import Harness, fan_out
from bench.scenarios.measure import vendor_probe
from bench.scenarios.result import Result
from ops.drive import Session, poll
from ops.drive import meta_payloads as meta

COPIES = 5
COMMENT_AUTHOR = "u1"
"""Who wrote the comments the triage jobs carry."""
TOGETHER = 3


@dataclass(frozen=True)
class Params:
    deliveries: int = 40
    jobs: int = 20


FULL = Params()
QUICK = Params(deliveries=8, jobs=4)


def _storm(s: Session, requests: list, together: int) -> list:
    """Send copies of each request: the first COPIES - together one by one, the rest at once."""
    results = []
    for copies in requests:
        for send in copies[: COPIES - together]:
            results.append(send())
        results.extend(fan_out(copies[COPIES - together :], together))
    return results


@dataclass
class Observed:
    hook_statuses: list[int]
    job_answers: list[tuple[int, str]]
    rows: int
    stored: Counter[tuple[str, str]]
    triaged: Counter[str]
    calls: Counter[str]
    door: Counter[str]
    hook_outcomes: Counter[str]
    job_outcomes: Counter[str]
    comments: list[tuple[str, str]]


def _measure(h: Harness, p: Params) -> Observed:

    tag = uuid.uuid4().hex[:6]
    with h.session() as s, vendor_probe() as probe:
        s.configure_model(latency_ms=50)
        messages = [(f"waba-dup-{n % 5}-{tag}", f"wamid.dup.{tag}.{n}") for n in range(p.deliveries)]
        # The same bytes every time, as Meta retries (the payload carries a timestamp: build it once).
        bodies = [meta.whatsapp_message(waba, wamid, "hi") for waba, wamid in messages]
        hook_requests = [[lambda body=body: s.client.deliver(body).status] * COPIES for body in bodies]
        comments = [(f"shop-dup-{n % 4}-{tag}", f"cmt-{tag}-{n}") for n in range(p.jobs)]

        def post(tenant: str, comment: str) -> tuple[int, str]:
            response = s.client.submit_job(
                lane="engagement",
                kind="comment.triage",
                tenant=tenant,
                payload={"comment_id": comment, "message": f"is {comment} in stock?", "from": {"id": COMMENT_AUTHOR}},
                idempotency_key=f"key-{comment}",
            )
            return response.status, str(response.json().get("id")) if response.status == 202 else ""

        job_requests = [[lambda t=t, c=c: post(t, c)] * COPIES for t, c in comments]
        hook_statuses = _storm(s, hook_requests, TOGETHER)
        job_answers = _storm(s, job_requests, TOGETHER)
        wabas = {w for w, _ in messages}
        tenants = {t for t, _ in comments}
        poll(
            lambda: (
                len(s.log.finished(wabas, "messages")) >= p.deliveries
                and len(s.log.finished(tenants, "engagement")) >= p.jobs
                and s.lanes_empty("messages", "engagement")
            ),
            60,
        )
        s.settle(10)
        rows = [r for r in s.scan("WebhookTableName") if r.get("tenant") in wabas]
        stored = Counter()
        for waba, wamid in messages:
            stored[(waba, wamid)] = int(s.stored_message(waba, wamid, meta.CUSTOMER) is not None)
        triaged = Counter()
        for tenant, comment in comments:
            item = s.stored_comment(tenant, comment, COMMENT_AUTHOR)
            triaged[comment] = int(item is not None and item.get("label", "untriaged") != "untriaged")
        calls = Counter()
        for _, comment in comments:
            calls[comment] = len(probe.for_prompt(f"is {comment} in stock?"))
        door = Counter(
            line.get("outcome")
            for _, line in s.log.lines(lambda _f, line: line.get("tenant") in wabas and "outcome" in line)
        )
        hook_lines = s.log.outcomes(lane="messages")
        hook_outcomes = Counter(r.outcome for r in hook_lines if r.tenant in wabas)
        job_lines = s.log.outcomes(lane="engagement")
        job_outcomes = Counter(r.outcome for r in job_lines if r.tenant in tenants)
    return Observed(
        hook_statuses=hook_statuses,
        job_answers=job_answers,
        rows=len(rows),
        stored=stored,
        triaged=triaged,
        calls=calls,
        door=door,
        hook_outcomes=hook_outcomes,
        job_outcomes=job_outcomes,
        comments=comments,
    )


def run(h: Harness, p: Params = FULL) -> Result:
    result = Result(
        number=8,
        title="Duplicate storm",
        question=f"Each of {p.deliveries} webhooks and {p.jobs} jobs arrives {COPIES} times, {TOGETHER} copies at "
        "once: how many effects?",
        baseline="no dedupe anywhere: every accepted copy is processed and applied",
        project_label="digest keys + idempotency keys + done-marks",
        baseline_label="no dedupe",
    )
    started = time.monotonic()
    seen = _measure(h, p)
    hook_statuses, job_answers, comments = seen.hook_statuses, seen.job_answers, seen.comments
    stored, triaged, calls, door = seen.stored, seen.triaged, seen.calls, seen.door
    hook_outcomes, job_outcomes = seen.hook_outcomes, seen.job_outcomes
    rows = seen.rows
    accepted_hooks = sum(1 for code in hook_statuses if code == 200)
    accepted_jobs = sum(1 for code, _ in job_answers if code == 202)
    job_ids = Counter(job_id for code, job_id in job_answers if code == 202)
    keys = [comment for _, comment in comments for _ in range(COPIES)]
    per_key = {
        comment: len(
            {job_id for (code, job_id), key in zip(job_answers, keys, strict=True) if code == 202 and key == comment}
        )
        for _, comment in comments
    }
    result.figure("webhook copies answered 200", f"{accepted_hooks}/{COPIES * p.deliveries}", f"{accepted_hooks}")
    result.figure("webhook log rows", str(rows), str(accepted_hooks), "one per distinct body")
    result.figure(
        "queue messages sent by the door",
        f"{door.get('enqueued', 0)} new + {door.get('re_enqueued', 0)} re-sent (row still pending)",
        str(accepted_hooks),
    )
    result.figure(
        "messages-lane outcomes",
        ", ".join(f"{k} {v}" for k, v in sorted(hook_outcomes.items())),
        f"done {accepted_hooks}",
    )
    result.figure(
        "stored copies per message",
        "/".join(str(v) for v in sorted(set(stored.values()))),
        str(COPIES),
    )
    result.figure("job POSTs answered 202", f"{accepted_jobs}/{COPIES * p.jobs}", str(accepted_jobs))
    result.figure("distinct job ids", str(len(job_ids)), str(accepted_jobs))
    result.figure(
        "engagement-lane outcomes",
        ", ".join(f"{k} {v}" for k, v in sorted(job_outcomes.items())),
        f"done {accepted_jobs}",
    )
    result.figure(
        "model calls per comment / triage items per comment",
        f"{'/'.join(str(v) for v in sorted(set(calls.values())))} / "
        f"{'/'.join(str(v) for v in sorted(set(triaged.values())))}",
        f"{COPIES} / {COPIES}",
    )
    once_hooks = all(v == 1 for v in stored.values()) and hook_outcomes.get("done", 0) == p.deliveries
    once_jobs = (
        all(v == 1 for v in triaged.values())
        and all(v == 1 for v in per_key.values())
        and job_outcomes.get("done", 0) == p.jobs
    )
    result.check(
        "one effect per webhook: one row, one stored message, one 'done'",
        once_hooks and rows == p.deliveries,
        f"{rows} rows, stored {sorted(set(stored.values()))}, done {hook_outcomes.get('done', 0)}",
    )
    result.check(
        "one job per idempotency key, one triage each",
        once_jobs,
        f"{len(job_ids)} job ids, triaged {sorted(set(triaged.values()))}, done {job_outcomes.get('done', 0)}",
    )
    result.headline = (
        f"{accepted_hooks + accepted_jobs} accepted copies became {p.deliveries + p.jobs} effects "
        f"({rows} log rows, {len(job_ids)} jobs); without dedupe: {accepted_hooks + accepted_jobs}"
    )
    result.data.update(once_hooks=once_hooks, once_jobs=once_jobs, rows=rows, deliveries=p.deliveries)
    result.method = [
        f"{p.deliveries} distinct signed WhatsApp message webhooks, each sent {COPIES} times ({COPIES - TOGETHER} "
        f"in sequence, then {TOGETHER} concurrently); {p.jobs} comment-triage jobs, each posted {COPIES} times with "
        f"one Idempotency-Key ({TOGETHER} concurrently).",
        "Effects are read from the data table; model calls from the local model; the door's decisions from "
        "its own log lines (`enqueued`, `re_enqueued`, `duplicate`).",
    ]
    result.caveats = [
        "A redelivery of a row still pending is deliberately sent again (Meta retries only what it thinks "
        "failed), so some copies do reach the lane; the consumer's done-mark makes them no-ops.",
        "Meta's retries with different batching (the same message in a different body) get a different row; "
        "the messages task's conditional write stores the message once. Not exercised here.",
    ]
    if h.plot_dir is not None:
        from bench.scenarios import plots

        result.plots.append(
            plots.bars(
                h.plot_dir / "s08_duplicates.png",
                f"{COPIES} copies of each delivery and job",
                ["webhook copies", "log rows", "stored messages", "job POSTs", "jobs", "triaged comments"],
                {
                    "this pipeline": [
                        float(accepted_hooks),
                        float(rows),
                        float(sum(stored.values())),
                        float(accepted_jobs),
                        float(len(job_ids)),
                        float(sum(triaged.values())),
                    ],
                    "no dedupe": [
                        float(accepted_hooks),
                        float(accepted_hooks),
                        float(accepted_hooks),
                        float(accepted_jobs),
                        float(accepted_jobs),
                        float(accepted_jobs),
                    ],
                },
                ylabel="count",
            )
        )
    result.seconds = time.monotonic() - started
    return result
