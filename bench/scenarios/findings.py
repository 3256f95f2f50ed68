"""Findings: behaviour of the pipeline the scenarios ran into, reproduced and measured on demand
(`python -m bench.scenarios --findings`).

1. Records a consumer cannot start. A consumer starts a record only if the invocation has at
   least the task's time limit plus a reserve left (domain/consumer/task_step.py). The first version of
   the suite found that the records it could not start were failed back to SQS with visibility
   0: each return cost a receive, and on a lane whose batches outlast that window (the
   engagement lane with a slow model) never-tried work walked into the DLQ without a reason and
   paged someone. Since commit 923d9c7 such a record is re-sent at once like a deferral (its
   attempts carried, none added) and the original acked; since then, too, a record is started
   under whatever the invocation has left (down to a tenth of its limit, or the reserve) rather
   than only when its whole limit fits, and one stopped by the end of the invocation rather than
   by its own limit is re-sent the same way (`cut_short`). This reproduction measures what is
   left: no receive is spent, nothing is dead-lettered, and the re-sends (each a SendMessage
   and a delete) are counted.
"""

from __future__ import annotations

import collections
import time
import uuid

from bench.scenarios.harness import Harness, fan_out
from ops.drive import poll

LANE = "engagement"


def not_started_dead_letters(h: Harness, comments: int = 40, latency_ms: int = 1000) -> list[str]:
    from ops.drive import meta_payloads as meta

    tag = uuid.uuid4().hex[:6]
    pages = [f"page-ns-{n}-{tag}" for n in range(10)]
    with h.session() as s:
        s.configure_model(latency_ms=latency_ms)
        max_receives = s.runtime.env.lane(LANE).policy.max_receives
        statuses = fan_out(
            [
                lambda n=n: s.client.deliver(meta.page_comment(pages[n % len(pages)], f"c{n}-{tag}", f"hi {n}?")).status
                for n in range(comments)
            ],
            4,
        )
        poll(lambda: s.lanes_empty(LANE), 120, interval=1.0)
        time.sleep(1.5)
        lines = [r for r in s.log.outcomes(lane=LANE) if r.tenant in set(pages)]
        outcomes = collections.Counter(r.outcome for r in lines)
        dead_by_consumer = outcomes.get("dead_lettered", 0)
        dlq = s.depth(LANE, dlq=True).visible
        rows = collections.Counter(
            str(r.get("status")) for r in s.scan("WebhookTableName") if r.get("tenant") in set(pages)
        )
        highest = max((r.receive_count for r in lines if r.outcome == "not_started"), default=0)
        alarm = s.alarm_fired_at("EngagementLaneDeadLetters", 0) is not None
        replayed = sum(
            int(line.get("summary", {}).get("webhook", {}).get("replayed", 0))
            for _, line in s.log.lines(lambda _f, p: p.get("message") == "sweep finished")
        )
    not_started = outcomes.get("not_started", 0) + outcomes.get("cut_short", 0)
    return [
        "### Records a consumer cannot start or finish in time are re-sent, not dead-lettered",
        "",
        "Found by the first run of these scenarios and fixed in commits 923d9c7 and 802fbd5 (see the module "
        "docstring of `bench/scenarios/findings.py`). "
        f"Reproduction: {comments} comment webhooks from {len(pages)} pages "
        f"({statuses.count(200)} answered 200) on the engagement lane with the local model at {latency_ms} ms "
        "(local lane: 5 s timeout, 3 s task limit, 1 s reserve, batch 10, max receives "
        f"{max_receives}): a record starts while at least its 1 s reserve plus 1 s is left, so a batch has "
        "about three seconds in which to start records (one second before 802fbd5, 289 re-sends for these 40 "
        "comments).",
        "",
        f"- consumer outcome lines: {', '.join(f'{k} {v}' for k, v in sorted(outcomes.items()))}",
        f"- highest receive count on a `not_started` record: {highest} (a re-send starts again at 1; before the "
        "fix it climbed to max receives)",
        f"- messages in the engagement DLQ afterwards: {dlq} (dead-lettered by the consumer: {dead_by_consumer}); "
        f"DLQ alarm fired: {'yes' if alarm else 'no'}",
        f"- their log rows at the end: {', '.join(f'{k} {v}' for k, v in sorted(rows.items()))}, after {replayed} "
        "sweeper replays",
        "",
        f"What is left is churn: {not_started} re-sends for {comments} comments "
        f"({not_started / max(1, comments):.1f} each), each a SendMessage and a delete. It appears whenever a "
        "batch's tasks together need more than the invocation has (in production, on the engagement lane, "
        "when the model takes over ~5 s a comment). Records are started under whatever the invocation has left, "
        "so the re-sends are the batch's tail that did not fit, not all but its first record.",
    ]


def run(h: Harness) -> list[str]:
    return not_started_dead_letters(h)
