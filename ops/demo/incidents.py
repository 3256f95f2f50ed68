"""The demo's incidents, handled by on-call with `lanectl`: an model outage that admission
control turns into 503s, a poison message that is dead-lettered, alarmed on and redriven, and a
webhook door that cannot start, which only Lambda's and API Gateway's own counts can page on."""

from __future__ import annotations

import time
import uuid
from typing import TYPE_CHECKING

from ops.drive import meta_payloads as meta
from ops.drive import poll
from pipeline.adapters import lane_queue
from pipeline.settings.environ import EnvVar

if TYPE_CHECKING:
    from ops.demo.story import Demo

POISON_MARKER = "POISON-PILL"
AI_LANE = "ai"
DLQ_ALARM = "AiLaneDeadLetters"
DOOR_ERRORS_ALARM = "IngressWebhookLambdaErrors"
DOOR_ROUTE_ALARM = "IngressRoutePostWebhooksMeta5xx"
SECRET_VARIABLE = EnvVar.META_SECRET_ARN


def admission(d: Demo) -> None:
    d.step(
        "The model has an outage",
        """On-call pauses the ai lane. Producers keep posting AI jobs: the lane can no longer meet its
        objective, so the jobs API answers 503 with Retry-After instead of queueing promises it cannot
        keep. When the model is back, on-call resumes with a ramp and the accepted work completes.""",
    )
    paused = d.lanectl("lane", "pause", AI_LANE)
    d.expect("admission", "on-call pauses the ai lane", paused.returncode == 0, f"exit {paused.returncode}")
    time.sleep(1.5)  # the poller reads the mapping every second
    tenant = f"shop-{uuid.uuid4().hex[:6]}"
    accepted: list[str] = []
    shed = None
    for n in range(25):
        response = d.s.client.submit_job(
            lane=AI_LANE,
            kind="ai.inbound",
            tenant=tenant,
            payload={"conversation": f"conv-{n}", "message_id": f"m-{n}", "text": f"do you deliver to {n}?"},
        )
        if response.status == 503:
            shed = response
            break
        if response.status == 202:
            accepted.append(response.json()["id"])
        time.sleep(0.4)
    retry_after = shed.headers.get("retry-after") if shed else None
    d.expect(
        "admission",
        "the jobs API sheds with 503 and a Retry-After",
        shed is not None and bool(retry_after),
        f"{len(accepted)} accepted, then 503 Retry-After {retry_after} s" if shed else "never shed",
    )
    resumed = d.lanectl("lane", "resume", AI_LANE, "--ramp", "4s")
    d.expect("admission", "on-call resumes the lane with a ramp", resumed.returncode == 0, f"exit {resumed.returncode}")

    def all_done() -> bool:
        return all(d.s.client.job(job_id).json().get("status") == "done" for job_id in accepted)

    done = poll(all_done, 60, interval=1)
    d.expect("admission", "every accepted job completes after the resume", done, f"{len(accepted)} jobs")


def _dead_letters(d: Demo) -> int:
    return lane_queue.depth(d.s.aws("sqs"), d.s.queue_url(AI_LANE, dlq=True)).visible


def _replies(d: Demo, tenant: str) -> int:
    return sum(1 for i in d.s.items(f"conversation#{tenant}#conv-poison") if str(i["sk"]).startswith("reply#"))


def poison(d: Demo) -> None:
    d.step(
        "A message the model always fails on",
        f"""The model starts failing (a 500 from Bedrock) on any prompt containing {POISON_MARKER!r}.
        A customer message with it keeps failing, retried with backoff; at the lane's max receives it is
        dead-lettered with its reason and the DLQ alarm fires; the page reaches the on-call inbox only
        because the topic's policy lets CloudWatch publish. While it fails, most of the lane's model
        calls fail, so the lane may pause itself for a moment (model_failing, paged) until the probe
        resumes it. Once Bedrock fixes the fault, on-call looks at it, redrives it at a set rate, and
        the alarm clears, without a second page: on-call did the clearing.""",
    )
    # The fault is the model's (Bedrock answering 500 for this prompt), set on the local fake of it.
    d.s.configure_model(rejects=POISON_MARKER)
    tenant = f"shop-{uuid.uuid4().hex[:6]}"
    response = d.s.client.submit_job(
        lane=AI_LANE,
        kind="ai.inbound",
        tenant=tenant,
        payload={"conversation": "conv-poison", "message_id": "m-poison", "text": f"my order {POISON_MARKER} is late"},
    )
    d.expect("poison", "the job is accepted", response.status == 202, f"{response.status}")
    arrived = poll(lambda: _dead_letters(d), 60, interval=1)
    d.expect(
        "poison",
        "it reaches the ai dead-letter queue after max receives",
        arrived == 1,
        f"{arrived} message(s) in the DLQ",
    )
    alarm = poll(lambda: d.s.alarm_state(DLQ_ALARM) == "ALARM", 20, interval=1)
    d.expect("poison", "the DLQ alarm goes to ALARM", alarm, d.s.alarm_state(DLQ_ALARM))
    paged = poll(lambda: any(p.state == "ALARM" for p in d.s.pages(DLQ_ALARM)), 10, interval=0.5)
    pages = d.s.pages(DLQ_ALARM)
    d.expect(
        "poison",
        "on-call is paged: CloudWatch publishes through the topic's policy to the on-call inbox",
        paged,
        f"{pages[-1].subject!r} to {pages[-1].endpoint}" if pages else "no page in the inbox",
    )
    d.lanectl("dlq", "peek", AI_LANE, "-n", "1")
    d.s.configure_model(rejects="")
    redrive = d.lanectl("dlq", "redrive", AI_LANE, "--rate", "5")
    left = _dead_letters(d)
    d.expect(
        "poison",
        "lanectl redrives it at a set rate",
        redrive.returncode == 0 and left == 0,
        f"exit {redrive.returncode}, {left} left in the DLQ",
    )
    answered = poll(lambda: _replies(d, tenant) > 0, 40, interval=1)
    replies = _replies(d, tenant)
    d.expect("poison", "after the fix it is processed exactly once", answered and replies == 1, f"{replies} reply")
    cleared = poll(lambda: d.s.alarm_state(DLQ_ALARM) == "OK", 30, interval=1)
    d.expect("poison", "the DLQ alarm returns to OK", cleared, d.s.alarm_state(DLQ_ALARM))


def door_cannot_start(d: Demo) -> None:
    d.step(
        "The webhook door cannot start",
        f"""A change ships the door without {SECRET_VARIABLE}: every cold start fails before any handler
        runs, so Meta gets a 500 and the door's own failure counts say nothing. Lambda counts each as
        an error and API Gateway each 5xx on the route, and those page on-call. Once the setting is
        back, Meta's redelivery of the same message is taken.""",
    )
    kept: dict[str, str] = {}
    d.s.update_environment("ingress", lambda variables: kept.update(arn=variables.pop(SECRET_VARIABLE)))
    delivery = meta.whatsapp_message(f"waba-{uuid.uuid4().hex[:6]}", "wamid.demo-unstarted", "anyone there?")
    status = d.s.client.deliver(delivery).status
    d.expect("door", "a delivery the door cannot start for is answered 500", status == 500, f"{status}")
    alarm = poll(lambda: d.s.alarm_state(DOOR_ERRORS_ALARM) == "ALARM", 30, interval=1)
    d.expect("door", "Lambda's Errors alarm on the door goes to ALARM", alarm, d.s.alarm_state(DOOR_ERRORS_ALARM))
    paged = poll(lambda: any(p.state == "ALARM" for p in d.s.pages(DOOR_ERRORS_ALARM)), 10, interval=0.5)
    pages = d.s.pages(DOOR_ERRORS_ALARM)
    d.expect(
        "door",
        "on-call is paged for the door's Lambda errors",
        paged,
        f"{pages[-1].subject!r} to {pages[-1].endpoint}" if pages else "no page in the inbox",
    )
    route = poll(lambda: d.s.alarm_state(DOOR_ROUTE_ALARM) == "ALARM", 10, interval=0.5)
    d.expect("door", "the route's 5xx alarm goes to ALARM", route, d.s.alarm_state(DOOR_ROUTE_ALARM))
    d.s.update_environment("ingress", lambda variables: variables.update({SECRET_VARIABLE: kept["arn"]}))
    redelivered = d.s.client.deliver(delivery).status
    d.expect("door", "with the setting back, Meta's redelivery is taken", redelivered == 200, f"{redelivered}")


SCENES = (admission, poison, door_cannot_start)
