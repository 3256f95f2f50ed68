"""14. A lane that pauses itself: Meta's access token revoked for a while, and brought back.

Customers' AI turns arrive steadily as ai.inbound jobs naming where replies go (WhatsApp). For
`revoked_seconds` the local Graph API refuses every token with Meta's 190 (local_aws/graph_fake.py
`revoked`), as after a revocation in Business Manager, then takes the stored token again, as after
a new one is stored or the old one reinstated.

- this pipeline: the first reply refused with 190 is held in the lane (no attempt spent) and the
  consumer disables its own mapping and marks the pause as its own (domain/dependencies/lane_pause.py); the
  lane probe (handlers/lane_probe.py, its own schedule) asks Meta `GET /me` with the token on every
  run, and once it answers, raises the mapping's MaximumConcurrency one ramp step a run, from 2 to
  the lane's own;
- baseline, retry with backoff (a consumer without the pause): every turn whose send keeps failing
  for its receives' span is dead-lettered; counted from the same run, not run.

Clock: the local environment's. The probe runs every 3 s with a 20 s ramp (prod: every 60 s, a
10-minute ramp: a scale of 1 to 20 for the probe) and the ai lane's MaximumConcurrency is 3 (prod:
40), so the ramp has two steps, 2 then 3. The revocation is not scaled: `revoked_seconds` of real
time. Measured from the mapping's state and MaximumConcurrency, sampled every 0.1 s through
Lambda's API, the Graph API's outbox and refusals, the reply items, the DLQ and the pause alarm.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from bench.scenarios.harness import Harness, Sampler
from bench.scenarios.result import Result
from ops.drive import poll
from pipeline.domain.dependencies import meta_send as ms
from pipeline.tasks import ai
from stacks.config.environments import ENVIRONMENTS, LOCAL_SHOP

LANE = "ai"
PAUSE_ALARM = "AiLanePausedMetaTokenInvalid"
RETRY_AFTER_CAP = 3.0
"""A shed turn is posted again after its Retry-After, at most this long (the local clocks are short)."""


@dataclass(frozen=True)
class Params:
    turns: int = 90
    per_second: float = 1.0
    revoke_after: float = 15.0
    revoked_seconds: float = 60.0
    settle_timeout: float = 120.0


FULL = Params()
QUICK = Params(turns=24, per_second=2.0, revoke_after=3.0, revoked_seconds=6.0, settle_timeout=90.0)


def _retry_span() -> float:
    """The longest a record failing on every receive spends in its lane before the DLQ takes it:
    its backoffs at their caps (full jitter only shortens them)."""
    lane = ENVIRONMENTS["local"].lane(LANE).policy
    return sum(min(lane.retry.cap_seconds, lane.retry.base_seconds * 2**n) for n in range(lane.max_receives - 1))


@dataclass
class Observed:
    """What one run saw, in the runtime's time (epoch seconds)."""

    revoked_at: float
    restored_at: float
    submitted: dict[int, float]
    shed: int
    times: list[float]
    enabled: list[float]
    levels: list[float]
    counts: Counter[str]
    dead_letters: int
    alarm_at: float | None
    first_refusal: float | None
    refusals: int
    per_turn: Counter[str]
    last_sent: float | None
    token_checks: int
    target: int


def _submit(s: Any, p: Params, tenant: str, submitted: dict[int, float], shed: list[int]) -> None:
    """One turn a `1 / per_second`, each on its own connection: a turn the jobs API sheds (503 while
    the paused lane's backlog is past its objective) is posted again after its Retry-After, with the
    same Idempotency-Key, as a producer does; `submitted` keeps when each turn first arrived."""

    def one(n: int) -> None:
        submitted[n] = time.time()
        reply_to = {"channel": "whatsapp", "business_id": "1098765", "recipient": f"1555100{n:04d}"}
        payload = {"conversation": f"conv-{n}", "message_id": "m1", "text": f"question {n}?", "reply_to": reply_to}
        while True:
            response = s.client.submit_job(
                lane=LANE, kind=ai.INBOUND, tenant=tenant, payload=payload, idempotency_key=f"{tenant}-turn-{n}"
            )
            if response.status == 202:
                return
            if response.status != 503:
                raise RuntimeError(f"job refused: {response.status}")
            shed.append(n)
            time.sleep(min(RETRY_AFTER_CAP, float(response.headers.get("retry-after") or 1)))

    begin = time.time()
    with ThreadPoolExecutor(max_workers=16, thread_name_prefix="turn") as pool:
        futures = []
        for n in range(p.turns):
            time.sleep(max(0.0, begin + n / p.per_second - time.time()))
            futures.append(pool.submit(one, n))
        for future in futures:
            future.result()


def _replies(s: Any, p: Params, tenant: str) -> Counter[str]:
    found: Counter[str] = Counter()
    for n in range(p.turns):
        items = s.items(ai.conversation_pk(tenant, f"conv-{n}"))
        reply = next((i for i in items if str(i["sk"]).startswith("reply#")), None)
        found[str(reply.get("send_state")) if reply else "none"] += 1
    return found


def _drive(h: Harness, p: Params) -> Observed:
    tenant = LOCAL_SHOP  # owns the number replied through (TENANT_ASSETS)
    submitted: dict[int, float] = {}
    shed: list[int] = []
    target = ENVIRONMENTS["local"].lane(LANE).policy.max_concurrency
    with h.session() as s:
        s.configure_lane(LANE, options={"debounce_seconds": "0"})
        lambda_ = s.aws("lambda")
        mapping_id = s.outputs["AiMappingId"]

        def enabled() -> float:
            return float(lambda_.get_event_source_mapping(UUID=mapping_id)["State"] in ("Enabled", "Enabling"))

        def level() -> float:
            found = lambda_.get_event_source_mapping(UUID=mapping_id).get("ScalingConfig") or {}
            return float(found.get("MaximumConcurrency") or target)

        def settled() -> Counter[str] | None:
            found = _replies(s, p, tenant)
            return found if found[ms.SENT] + found[ms.UNANSWERED] == p.turns else None

        with Sampler({"enabled": enabled, "level": level}, interval=0.1) as sampler:
            producer = threading.Thread(target=_submit, args=(s, p, tenant, submitted, shed), name="turns", daemon=True)
            began = time.time()
            producer.start()
            time.sleep(max(0.0, began + p.revoke_after - time.time()))
            revoked_at = time.time()
            s.configure_graph(revoked=True)
            time.sleep(p.revoked_seconds)
            s.configure_graph(revoked=False)
            restored_at = time.time()
            producer.join(timeout=p.turns / p.per_second + p.settle_timeout)
            counts = poll(settled, p.settle_timeout, interval=1) or _replies(s, p, tenant)
            poll(lambda: s.total_depth(LANE) == 0, p.settle_timeout, interval=0.5)
            # The ramp is part of what is observed: the turns may all be answered before the probe's
            # next step raises the lane to its concurrency (a busy machine answers them in the first).
            poll(lambda: enabled() == 1.0 and level() == target, p.settle_timeout, interval=0.5)
            time.sleep(1.0)
        dlq = s.depth(LANE, dlq=True)
        refused = [r for r in s.runtime.graph.refused() if r.code == ms.TOKEN_INVALID]
        outbox = [sent for sent in s.runtime.graph.outbox() if (ms.peek_callback(sent.callback) or ("",))[0] == tenant]
        return Observed(
            revoked_at=revoked_at,
            restored_at=restored_at,
            submitted=submitted,
            shed=len(shed),
            times=sampler.times,
            enabled=sampler.values["enabled"],
            levels=sampler.values["level"],
            counts=counts,
            dead_letters=int(dlq.visible + dlq.in_flight),
            alarm_at=s.alarm_fired_at(PAUSE_ALARM, revoked_at),
            first_refusal=min((r.at for r in refused), default=None),
            refusals=len(refused),
            per_turn=Counter((ms.peek_callback(sent.callback) or ("", "", ""))[1] for sent in outbox),
            last_sent=max((sent.at for sent in outbox), default=None),
            token_checks=s.runtime.graph.token_checks,
            target=target,
        )


def _secs(value: float | None) -> str:
    return "never" if value is None else f"{value:.1f} s"


def run(h: Harness, p: Params) -> Result:
    result = Result(
        number=14,
        title="A lane that pauses itself",
        question=f"Meta's token is revoked for {p.revoked_seconds:g} s while AI turns arrive: is any turn "
        "dead-lettered or lost, how soon does the lane stop, and how does it come back?",
        baseline="retry with backoff: each refused send spends a receive, up to the lane's max receives",
        project_label="pause and probe",
        baseline_label="retry with backoff",
    )
    started = time.monotonic()
    o = _drive(h, p)
    samples = list(zip(o.times, o.enabled, o.levels, strict=True))
    paused_at = next((t for t, on, _ in samples if t >= o.revoked_at and not on), None)
    resumed_at = next((t for t, on, _ in samples if t >= o.restored_at and on), None)
    ramp: list[tuple[float, int]] = []
    for t, on, lvl in samples:
        if resumed_at is not None and t >= resumed_at and on and (not ramp or ramp[-1][1] != int(lvl)):
            ramp.append((round(t - o.restored_at, 1), int(lvl)))
    span = _retry_span()
    baseline_dead = sum(1 for at in o.submitted.values() if o.revoked_at <= at <= o.restored_at - span)
    paused_after = None if paused_at is None else paused_at - o.revoked_at
    resumed_after = None if resumed_at is None else resumed_at - o.restored_at
    most = max(o.per_turn.values(), default=0)
    sent = o.counts[ms.SENT]

    result.figure("AI turns (one reply each)", str(p.turns), str(p.turns))
    result.figure("token revoked for", f"{p.revoked_seconds:g} s", f"{p.revoked_seconds:g} s")
    result.figure("lane paused after the revocation", _secs(paused_after), "never")
    result.figure(
        "lane paused after the first 190",
        _secs(None if paused_at is None or o.first_refusal is None else paused_at - o.first_refusal),
    )
    result.figure("pause alarm after the revocation", _secs(None if o.alarm_at is None else o.alarm_at - o.revoked_at))
    result.figure("sends refused with 190", str(o.refusals))
    result.figure("probe's GET /me calls", str(o.token_checks), "0")
    result.figure("lane resumed after the token was restored", _secs(resumed_after))
    result.figure("ramp (s after restore: MaximumConcurrency)", ", ".join(f"+{t:g}: {v}" for t, v in ramp) or "none")
    result.figure("dead-lettered", str(o.dead_letters), f"{baseline_dead} (counted)")
    result.figure("posts shed by admission (503, posted again)", str(o.shed), "")
    result.figure("turns answered", f"{sent}/{p.turns}", f"{p.turns - baseline_dead}/{p.turns}")
    result.figure("replies per turn (max)", str(most))
    result.figure(
        "last reply sent after the restore", _secs(None if o.last_sent is None else o.last_sent - o.restored_at)
    )
    result.check("nothing is dead-lettered", o.dead_letters == 0, f"{o.dead_letters} in the ai lane's DLQ")
    result.check("every turn is answered once the token is back", sent == p.turns, f"{dict(o.counts)}")
    replied = f"{len(o.per_turn)} turns replied to, at most {most} each"
    result.check("no turn gets more than one reply", most <= 1, replied)
    result.check("the lane paused itself while the token was revoked", paused_after is not None, _secs(paused_after))
    result.check(
        "the probe resumed it after the token was restored, and the ramp reached the lane's concurrency",
        resumed_after is not None and bool(ramp) and ramp[0][1] <= 2 and ramp[-1][1] == o.target,
        f"resumed {_secs(resumed_after)} after; ramp {ramp}",
    )
    result.check("the pause paged on-call, naming the cause", o.alarm_at is not None, PAUSE_ALARM)
    result.method = [
        "The mapping's State and MaximumConcurrency are read through Lambda's API every 0.1 s; paused and "
        "resumed times are the first samples after the revocation and the restore that show the change.",
        "Turns arrive as ai.inbound jobs, one every 1/per_second s; while the paused lane's backlog predicts a "
        "wait past its objective the jobs API sheds them with 503, and the producer posts them again after "
        "Retry-After with the same Idempotency-Key (a turn arriving through Meta's webhook is never shed).",
        "Replies are read from the Graph API's outbox by the attempt reference each send carried; a turn is "
        "answered when its reply item is `sent`.",
        f"The baseline is counted, not run: a turn submitted during the revocation more than {span:g} s (its "
        "retries' span at their caps, the local ai lane's 5 receives) before the restore would have spent every "
        "receive on 190 and been dead-lettered.",
    ]
    result.caveats = [
        "Local clocks: the probe runs every 3 s with a 20 s ramp (prod: 60 s and 10 minutes) and the ai lane's "
        "MaximumConcurrency is 3 (prod: 40), so the ramp has two steps here; prod's takes ten, one a minute.",
        "A record held by the pause comes back after its hold (60 s in prod, the lane's retry cap of 5 s here), "
        "so the last turns held are answered that long after the lane resumes.",
    ]
    result.headline = (
        f"paused {_secs(paused_after)} after the revocation, {o.dead_letters} dead-lettered, "
        f"{sent}/{p.turns} answered, resumed {_secs(resumed_after)} after the restore"
    )
    result.data = {
        "paused_after": paused_after,
        "resumed_after": resumed_after,
        "ramp": ramp,
        "target": o.target,
        "dead_letters": o.dead_letters,
        "baseline_dead": baseline_dead,
        "states": dict(o.counts),
        "per_turn": dict(o.per_turn),
        "token_checks": o.token_checks,
        "alarmed": o.alarm_at is not None,
        "turns": p.turns,
        "shed": o.shed,
        "last_sent_after": None if o.last_sent is None else o.last_sent - o.restored_at,
    }
    result.seconds = time.monotonic() - started
    return result
