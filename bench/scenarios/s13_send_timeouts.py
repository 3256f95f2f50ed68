"""13. Replies under send timeouts: Meta accepts a reply but its answer is lost, for a share of sends.

Customers' messages arrive as ai.inbound jobs naming where replies go (WhatsApp); each turn's reply
is sent through the local Graph API (local_aws/graph_fake.py), which accepts every send but drops
the connection before answering for `lost` of them: a timeout after the request left. WhatsApp's
`sent` status, carrying the attempt's reference, still comes back for most; `status_loss` of them
never arrive.

- this pipeline: each attempt is recorded before the call; an unknown outcome is resolved by the
  status or, after the lane's window, left unanswered and counted (tasks/replies.py), never resent;
- baseline, resend on timeout (what a sender without idempotency does): counted from the same
  outbox, every turn whose first send lost its answer would have been sent again.

Measured from the Graph API's outbox (what Meta accepted, by the attempt reference each send
carried), the reply items' send states, the consumer's lines and the unanswered-replies alarm.
"""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass

from bench.scenarios.harness import Harness
from bench.scenarios.result import Result
from ops.drive import poll
from pipeline.domain.dependencies import meta_send as ms
from pipeline.tasks import ai
from stacks.config.environments import LOCAL_SHOP

LANE = "ai"
ALARM = "AiLaneUnansweredReplies"


@dataclass(frozen=True)
class Params:
    turns: int = 40
    lost: float = 0.3
    status_loss: float = 0.25
    settle_timeout: float = 90.0


FULL = Params()
QUICK = Params(turns=12, lost=0.5, status_loss=0.5, settle_timeout=60.0)


def run(h: Harness, p: Params) -> Result:
    result = Result(
        number=13,
        title="Replies under send timeouts",
        question=f"Meta accepts every reply but {p.lost:.0%} of the answers are lost: does any turn get two "
        "replies, and are the turns nobody can confirm counted and alarmed?",
        baseline="resend on timeout: a sender without idempotency repeats a send whose answer it never got",
        project_label="recorded attempts",
        baseline_label="resend on timeout",
    )
    started = time.monotonic()
    tenant = LOCAL_SHOP  # owns the number replied through (TENANT_ASSETS)
    with h.session() as s:
        s.configure_lane(LANE, options={"debounce_seconds": "0"})
        s.configure_graph(lost_answer_rate=p.lost, hold_seconds=0.2, status_loss_rate=p.status_loss)
        for n in range(p.turns):
            reply_to = {"channel": "whatsapp", "business_id": "1098765", "recipient": f"1555000{n:04d}"}
            response = s.client.submit_job(
                lane=LANE,
                kind=ai.INBOUND,
                tenant=tenant,
                payload={
                    "conversation": f"conv-{n}",
                    "message_id": "m1",
                    "text": f"question {n}?",
                    "reply_to": reply_to,
                },
            )
            if response.status != 202:
                raise RuntimeError(f"job refused: {response.status}")

        def states() -> Counter[str]:
            found: Counter[str] = Counter()
            for n in range(p.turns):
                items = s.items(ai.conversation_pk(tenant, f"conv-{n}"))
                reply = next((i for i in items if str(i["sk"]).startswith("reply#")), None)
                found[str(reply.get("send_state")) if reply else "none"] += 1
            return found

        def settled() -> Counter[str] | None:
            found = states()
            return found if found[ms.SENT] + found[ms.UNANSWERED] == p.turns else None

        final = poll(settled, p.settle_timeout, interval=1)
        counts = final or states()
        alarmed = poll(lambda: s.alarm_state(ALARM) == "ALARM", 20, interval=1) if counts[ms.UNANSWERED] else False
        outbox = [sent for sent in s.runtime.graph.outbox() if (ms.peek_callback(sent.callback) or ("",))[0] == tenant]
        # The lane drained first: a record that fails after its reply's state was written would
        # reach the DLQ only then.
        poll(lambda: s.total_depth(LANE) == 0, p.settle_timeout, interval=0.5)
        dlq = s.depth(LANE, dlq=True)
        dead_letters = int(dlq.visible + dlq.in_flight)
        s.configure_graph(lost_answer_rate=0.0, status_loss_rate=0.0)
    per_turn = Counter((ms.peek_callback(sent.callback) or ("", "", ""))[1] for sent in outbox)
    lost = [sent for sent in outbox if sent.answer_lost]
    naive_per_turn = {
        turn: count + sum(1 for x in lost if (ms.peek_callback(x.callback) or ("", ""))[1] == turn)
        for turn, count in per_turn.items()
    }
    result.figure("turns", str(p.turns), str(p.turns))
    result.figure("sends whose answer was lost", str(len(lost)), str(len(lost)))
    result.figure(
        "replies per turn (max)", str(max(per_turn.values(), default=0)), str(max(naive_per_turn.values(), default=0))
    )
    result.figure(
        "turns answered twice",
        str(sum(1 for c in per_turn.values() if c > 1)),
        str(sum(1 for c in naive_per_turn.values() if c > 1)),
    )
    result.figure("replies confirmed sent", str(counts[ms.SENT]), "")
    result.figure("turns left unanswered (counted)", str(counts[ms.UNANSWERED]), "0 (not known)")
    result.figure("unanswered-replies alarm", "ALARM" if alarmed else "OK", "none")
    result.check("no turn gets more than one reply", max(per_turn.values(), default=0) <= 1, f"{dict(per_turn)}")
    result.check(
        "every turn ends sent or unanswered",
        counts[ms.SENT] + counts[ms.UNANSWERED] == p.turns,
        f"{dict(counts)}",
    )
    result.check(
        "no stamp, turn or send is dead-lettered: every record settles, its reply state says how",
        dead_letters == 0,
        f"{dead_letters} in the ai lane's DLQ",
    )
    result.check(
        "unanswered turns page on-call",
        alarmed == bool(counts[ms.UNANSWERED]),
        f"{counts[ms.UNANSWERED]} unanswered, alarm {'ALARM' if alarmed else 'not in ALARM'}",
    )
    result.method = [
        "Replies sent are read from the Graph API's outbox, by the attempt reference each send carried "
        "(biz_opaque_callback_data); the baseline's count adds one send for each send whose answer was lost.",
    ]
    result.caveats = [
        "The baseline is counted, not run: it is what the same outbox would hold had every lost answer been "
        "resent once. A real sender retrying more than once would answer more often still.",
    ]
    result.headline = (
        f"max {max(per_turn.values(), default=0)} reply per turn ({len(lost)} answers lost), "
        f"{counts[ms.UNANSWERED]} unanswered counted and alarmed"
    )
    result.data = {
        "per_turn": dict(per_turn),
        "naive_per_turn": naive_per_turn,
        "states": dict(counts),
        "alarmed": alarmed,
        "dead_letters": dead_letters,
    }
    result.seconds = time.monotonic() - started
    return result
