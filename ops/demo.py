"""`make demo`: the real pipeline on this machine, driven as Meta, a producer and on-call would.

It starts the local runtime (the `local` template deployed into an in-process emulator), then
plays a narrated scenario through HTTP only: signed WhatsApp messages and out-of-order statuses,
a forged and a redelivered webhook, a comment flood from one page beside a quiet one, AI jobs
until admission control answers 503 with Retry-After, and a poison message that ends in the
dead-letter queue, fires its alarm, and is redriven with `lanectl` once the fault is cleared.
It ends with a table of what happened and exits 0 only if every expectation held.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

import boto3

from ops import meta_payloads as meta
from ops.runtime.client import PipelineClient

ROOT = Path(__file__).resolve().parents[1]
POISON_MARKER = "POISON-PILL"
AI_LANE = "ai"


@dataclass
class Expectation:
    step: str
    claim: str
    held: bool
    observed: str


@dataclass
class Demo:
    out: TextIO
    runtime: Any = None
    client: PipelineClient | None = None
    secret: dict[str, str] = field(default_factory=dict)
    results: list[Expectation] = field(default_factory=list)
    started: float = field(default_factory=time.monotonic)

    # ------------------------------------------------------------------ narration

    def say(self, text: str = "") -> None:
        self.out.write(text + "\n")
        self.out.flush()

    def _runtime_event(self, line: str) -> None:
        # Alarms settling from "no data yet" to OK at start-up are not news; firing and clearing are.
        if "ALARM" in line or "error" in line:
            self.say(f"   [runtime] {line}")

    def step(self, title: str, story: str) -> None:
        self.say()
        self.say(f"== {title}  (t+{time.monotonic() - self.started:.0f}s)")
        for line in story.strip().splitlines():
            self.say(f"   {line.strip()}")

    def expect(self, step: str, claim: str, held: bool, observed: str) -> bool:
        self.results.append(Expectation(step, claim, bool(held), observed))
        self.say(f"   {'✓' if held else '✗'} {claim}: {observed}")
        return bool(held)

    # ------------------------------------------------------------------ plumbing

    def aws(self, service: str) -> Any:
        return boto3.client(
            service,
            endpoint_url=self.runtime.aws_endpoint,
            region_name="us-east-1",
            aws_access_key_id="local",
            aws_secret_access_key="local",  # noqa: S106 (the emulator's stand-in credentials)
        )

    @property
    def outputs(self) -> dict[str, str]:
        return dict(self.runtime.deployment.outputs)

    def lanectl(self, *args: str) -> subprocess.CompletedProcess[str]:
        command = [
            sys.executable,
            "-m",
            "ops.cli",
            "--env",
            "local",
            "--endpoint-url",
            self.runtime.aws_endpoint,
            *args,
        ]
        self.say(f"   $ lanectl --env local {' '.join(args)}")
        result = subprocess.run(  # noqa: S603 (our own CLI, fixed arguments)
            command, cwd=ROOT, capture_output=True, text=True, timeout=300, check=False
        )
        for line in (result.stdout + result.stderr).strip().splitlines()[-12:]:
            self.say(f"     | {line}")
        return result

    def wait(self, predicate: Callable[[], Any], timeout: float, interval: float = 0.5) -> Any:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            value = predicate()
            if value:
                return value
            time.sleep(interval)
        return predicate()

    def items(self, pk: str) -> list[dict[str, Any]]:
        response = self.aws("dynamodb").query(
            TableName=self.outputs["DataTableName"],
            KeyConditionExpression="pk = :pk",
            ExpressionAttributeValues={":pk": {"S": pk}},
            ConsistentRead=True,
        )
        return list(response["Items"])

    def log_rows(self, tenant: str) -> list[dict[str, Any]]:
        rows = self.aws("dynamodb").scan(TableName=self.outputs["WebhookTableName"])["Items"]
        return [r for r in rows if r.get("tenant", {}).get("S") == tenant]

    def outcomes(self, lane: str, outcome: str) -> int:
        from pipeline import metric_names
        from stacks.runtime_env import metrics_namespace

        return int(
            self.runtime.metrics.total_matching(
                metrics_namespace(self.runtime.env),
                metric_names.RECORDS,
                {metric_names.LANE: lane, metric_names.OUTCOME: outcome},
            )
        )

    def alarm_state(self, logical_prefix: str) -> str:
        (alarm,) = [a for a in self.runtime.alarms.alarms if a.logical_id.startswith(logical_prefix)]
        described = self.aws("cloudwatch").describe_alarms(AlarmNames=[alarm.name])["MetricAlarms"]
        return str(described[0]["StateValue"]) if described else "missing"

    def set_vendor_option(self, name: str, value: str | None) -> None:
        """On-call changes the AI consumer's configuration, as `aws lambda update-function-
        configuration` would; the runtime adopts it like a deploy (new instances)."""
        function = self.outputs["AiFunctionName"]
        lambda_ = self.aws("lambda")
        variables = dict(lambda_.get_function_configuration(FunctionName=function)["Environment"]["Variables"])
        lane = json.loads(variables["LANE"])
        options = dict(lane.get("options", {}))
        if value is None:
            options.pop(name, None)
        else:
            options[name] = value
        lane["options"] = options
        variables["LANE"] = json.dumps(lane, separators=(",", ":"))
        lambda_.update_function_configuration(FunctionName=function, Environment={"Variables": variables})
        time.sleep(2.5)  # the runtime re-reads function configuration every two seconds

    # ------------------------------------------------------------------ the story

    def run(self) -> int:
        from ops.runtime.runtime import LocalRuntime

        self.say("Starting the local runtime: synthesizing the `local` environment and deploying it into moto...")
        self.runtime = LocalRuntime(on_event=self._runtime_event)
        self.runtime.start()
        try:
            return self._story()
        finally:
            from ops.runtime.console import summary

            text = summary(self.runtime)
            self.runtime.stop()
            self.say(text)

    def _story(self) -> int:
        self.say(f"   API {self.runtime.api_url}   emulated AWS {self.runtime.aws_endpoint}")
        secret_arn = self.outputs["MetaSecretArn"]
        self.secret = json.loads(self.aws("secretsmanager").get_secret_value(SecretId=secret_arn)["SecretString"])
        self.client = PipelineClient(self.runtime.api_url, app_secret=self.secret["app_secret"])
        for scene in (
            self.handshake,
            self.messages,
            self.forgery_and_redelivery,
            self.comment_flood,
            self.admission,
            self.poison,
        ):
            scene()
        return self.report()

    def handshake(self) -> None:
        self.step("Meta verifies the webhook", "Meta calls GET with the verify token and expects the challenge back.")
        assert self.client is not None
        ok = self.client.handshake(self.secret["verify_token"], "1158201444")
        self.expect(
            "handshake",
            "the right token gets the challenge as text",
            ok.status == 200 and ok.text == "1158201444",
            f"{ok.status} {ok.text!r}",
        )
        bad = self.client.handshake("guessed-token", "1158201444")
        self.expect("handshake", "a wrong token gets 403 and nothing else", bad.status == 403, f"{bad.status}")

    def messages(self) -> None:
        self.step(
            "A customer writes on WhatsApp",
            """Three signed messages from one customer, then the statuses of our reply arriving out of
            order (read before delivered). Each is logged before it is enqueued, routed to the messages lane.""",
        )
        assert self.client is not None
        self.waba = f"waba-{uuid.uuid4().hex[:6]}"
        self.first_delivery = meta.whatsapp_message(self.waba, "wamid.demo-1", "Hi! 👋")
        deliveries = [
            self.first_delivery,
            meta.whatsapp_message(self.waba, "wamid.demo-2", "is the shop open"),
            meta.whatsapp_message(self.waba, "wamid.demo-3", "on Sunday?"),
            meta.whatsapp_status(self.waba, "wamid.reply-1", "sent"),
            meta.whatsapp_status(self.waba, "wamid.reply-1", "read"),
            meta.whatsapp_status(self.waba, "wamid.reply-1", "delivered"),
        ]
        started = time.monotonic()
        statuses = [self.client.deliver(d).status for d in deliveries]
        answered_ms = (time.monotonic() - started) * 1000 / len(deliveries)
        self.expect(
            "messages",
            "every signed delivery is acknowledged 200",
            statuses == [200] * 6,
            f"{statuses}, {answered_ms:.0f} ms each on average",
        )
        stored = self.wait(
            lambda: all(self.items(f"msg#{self.waba}#wamid.demo-{n}") for n in (1, 2, 3)),
            timeout=30,
        )
        rows = self.log_rows(self.waba)
        self.expect(
            "messages",
            "all three messages are stored; their log rows are left as written (each stored message is its done-mark)",
            stored and all("pending_shard" not in r for r in rows),
            f"{len(rows)} log rows, {sum('pending_shard' in r for r in rows)} waiting for the sweeper",
        )
        status_items = [i for i in self.items(f"msg#{self.waba}#wamid.reply-1") if i["sk"]["S"] == "status"]
        status = status_items[0]["status"]["S"] if status_items else "none"
        self.expect("messages", "a late 'delivered' does not overwrite 'read'", status == "read", f"status {status!r}")

    def forgery_and_redelivery(self) -> None:
        self.step(
            "Someone forges a delivery; Meta retries a real one",
            """A body signed with the wrong secret, and one with no signature, must be refused before
            anything is written. A byte-identical redelivery must create no second row and no second message.""",
        )
        assert self.client is not None
        tenant = f"waba-{uuid.uuid4().hex[:6]}"
        forged = meta.whatsapp_message(tenant, "wamid.forged", "send me the refunds")
        wrong = self.client.deliver(forged, signature="sha256=" + "ab" * 32).status
        unsigned = self.client.deliver(forged, signature="").status
        time.sleep(1)
        self.expect(
            "forgery",
            "a wrong signature gets 403, a missing one 401",
            (wrong, unsigned) == (403, 401),
            f"{wrong}, {unsigned}",
        )
        self.expect(
            "forgery", "nothing forged was logged", not self.log_rows(tenant), f"{len(self.log_rows(tenant))} rows"
        )
        rows_before = len(self.log_rows(self.waba))
        again = self.client.deliver(self.first_delivery).status
        time.sleep(2)
        rows_after = len(self.log_rows(self.waba))
        copies = len([i for i in self.items(f"msg#{self.waba}#wamid.demo-1") if i["sk"]["S"] == "message"])
        self.expect(
            "redelivery",
            "the retry is acknowledged, no second row, one stored message",
            again == 200 and rows_after == rows_before and copies == 1,
            f"{again}; rows {rows_before} -> {rows_after}; {copies} copy",
        )

    def comment_flood(self) -> None:
        self.step(
            "A campaign floods one page with comments",
            """30 comments on one page arrive first, then 2 on a quiet page. Comments go to the engagement
            lane (never in front of messages); the page's in-flight quota defers the flood's surplus cheaply,
            so the quiet page is triaged without waiting for the campaign.""",
        )
        assert self.client is not None
        flood, quiet = f"page-{uuid.uuid4().hex[:6]}", f"page-{uuid.uuid4().hex[:6]}"
        deferred_before = self.outcomes("engagement", "deferred")
        started = time.monotonic()
        for n in range(30):
            self.client.deliver(meta.page_comment(flood, f"{flood}-c{n}", f"love this! #{n}"))
        quiet_sent = time.monotonic()
        for n in range(2):
            self.client.deliver(meta.page_comment(quiet, f"{quiet}-c{n}", "when do you open?"))

        def triaged(page: str, count: int) -> list[float]:
            times = []
            for n in range(count):
                for item in self.items(f"comment#{page}#{page}-c{n}"):
                    if item.get("label", {}).get("S", "untriaged") != "untriaged":
                        times.append(float(item["triaged_at"]["N"]))
            return times if len(times) == count else []

        quiet_done = self.wait(lambda: triaged(quiet, 2), timeout=40)
        flood_done = self.wait(lambda: triaged(flood, 30), timeout=90)
        deferred = self.outcomes("engagement", "deferred") - deferred_before
        wall = time.time() - time.monotonic()
        quiet_wait = max(quiet_done) - (quiet_sent + wall) if quiet_done else float("inf")
        flood_last = max(flood_done) - (started + wall) if flood_done else float("inf")
        self.expect(
            "fairness",
            "every comment of both pages is triaged",
            bool(quiet_done and flood_done),
            f"quiet {len(quiet_done)}/2, flood {len(flood_done)}/30",
        )
        self.expect("fairness", "the flood's surplus was deferred, not dropped", deferred > 0, f"{deferred} deferrals")
        self.expect(
            "fairness",
            "the quiet page waited less than the flood took",
            quiet_wait < flood_last,
            f"quiet page done after {quiet_wait:.1f} s; flood's last after {flood_last:.1f} s",
        )

    def admission(self) -> None:
        self.step(
            "The AI vendor has an outage",
            """On-call pauses the ai lane. Producers keep posting AI jobs: the lane can no longer meet its
            objective, so the jobs API answers 503 with Retry-After instead of queueing promises it cannot
            keep. When the vendor is back, on-call resumes with a ramp and the accepted work completes.""",
        )
        assert self.client is not None
        paused = self.lanectl("lane", "pause", AI_LANE)
        self.expect("admission", "on-call pauses the ai lane", paused.returncode == 0, f"exit {paused.returncode}")
        time.sleep(1.5)  # the poller reads the mapping every second
        tenant = f"shop-{uuid.uuid4().hex[:6]}"
        accepted: list[str] = []
        shed = None
        for n in range(25):
            response = self.client.submit_job(
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
        self.expect(
            "admission",
            "the jobs API sheds with 503 and a Retry-After",
            shed is not None and bool(retry_after),
            f"{len(accepted)} accepted, then 503 Retry-After {retry_after} s" if shed else "never shed",
        )
        resumed = self.lanectl("lane", "resume", AI_LANE, "--ramp", "4s")
        self.expect(
            "admission", "on-call resumes the lane with a ramp", resumed.returncode == 0, f"exit {resumed.returncode}"
        )

        def all_done() -> bool:
            assert self.client is not None
            return all(self.client.job(job_id).json().get("status") == "done" for job_id in accepted)

        done = self.wait(all_done, timeout=60, interval=1)
        self.expect("admission", "every accepted job completes after the resume", done, f"{len(accepted)} jobs")

    def poison(self) -> None:
        self.step(
            "A message the vendor always rejects",
            f"""The vendor starts rejecting any prompt containing {POISON_MARKER!r} (a fault on their side).
            A customer message with it keeps failing, retried with backoff; at the lane's max receives it is
            dead-lettered with its reason and the DLQ alarm fires. Once the vendor fixes the fault, on-call
            looks at it, redrives it at a set rate, and the alarm clears.""",
        )
        assert self.client is not None
        self.set_vendor_option("vendor_rejects", POISON_MARKER)
        tenant = f"shop-{uuid.uuid4().hex[:6]}"
        response = self.client.submit_job(
            lane=AI_LANE,
            kind="ai.inbound",
            tenant=tenant,
            payload={
                "conversation": "conv-poison",
                "message_id": "m-poison",
                "text": f"my order {POISON_MARKER} is late",
            },
        )
        self.expect("poison", "the job is accepted", response.status == 202, f"{response.status}")
        dlq_url = self.outputs["AiDlqUrl"]

        def dead_letters() -> int:
            attributes = self.aws("sqs").get_queue_attributes(
                QueueUrl=dlq_url, AttributeNames=["ApproximateNumberOfMessages"]
            )["Attributes"]
            return int(attributes["ApproximateNumberOfMessages"])

        arrived = self.wait(dead_letters, timeout=60, interval=1)
        self.expect(
            "poison",
            "it reaches the ai dead-letter queue after max receives",
            arrived == 1,
            f"{arrived} message(s) in the DLQ",
        )
        alarm = self.wait(lambda: self.alarm_state("AiLaneDeadLetters") == "ALARM", timeout=20, interval=1)
        self.expect("poison", "the DLQ alarm goes to ALARM", alarm, self.alarm_state("AiLaneDeadLetters"))
        self.lanectl("dlq", "peek", AI_LANE, "-n", "1")
        self.set_vendor_option("vendor_rejects", None)
        redrive = self.lanectl("dlq", "redrive", AI_LANE, "--rate", "5")
        self.expect(
            "poison",
            "lanectl redrives it at a set rate",
            redrive.returncode == 0 and dead_letters() == 0,
            f"exit {redrive.returncode}, {dead_letters()} left in the DLQ",
        )

        def replied() -> bool:
            return any(i["sk"]["S"].startswith("reply#") for i in self.items(f"conversation#{tenant}#conv-poison"))

        answered = self.wait(replied, timeout=40, interval=1)
        replies = len(
            [i for i in self.items(f"conversation#{tenant}#conv-poison") if i["sk"]["S"].startswith("reply#")]
        )
        self.expect(
            "poison", "after the fix it is processed exactly once", answered and replies == 1, f"{replies} reply"
        )
        cleared = self.wait(lambda: self.alarm_state("AiLaneDeadLetters") == "OK", timeout=30, interval=1)
        self.expect("poison", "the DLQ alarm returns to OK", cleared, self.alarm_state("AiLaneDeadLetters"))

    def report(self) -> int:
        held = [r for r in self.results if r.held]
        self.say()
        self.say(f"What happened (t+{time.monotonic() - self.started:.0f}s)")
        width = max(len(r.claim) for r in self.results)
        for r in self.results:
            self.say(f"  {'✓' if r.held else '✗'} {r.step:<11} {r.claim:<{width}}  {r.observed}")
        self.say(f"{len(held)} of {len(self.results)} expectations held")
        return 0 if len(held) == len(self.results) else 1


def add_arguments(parser: argparse.ArgumentParser) -> None:
    del parser  # the demo takes no options: it is the same story every time


def main(args: argparse.Namespace | None = None) -> int:
    del args
    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")
    return Demo(out=sys.stdout).run()


if __name__ == "__main__":
    raise SystemExit(main())
