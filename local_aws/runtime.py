"""The local runtime: the `local` environment's template, deployed into moto and played.

    with LocalRuntime() as runtime:
        requests.post(runtime.api_url + "/webhooks/meta", ...)

Handlers inside the runtime reach moto in-process; tools in other processes (the operator CLI
with `--env local`) reach the same backend through moto's server mode on `aws_endpoint`.

This module starts and stops the parts; local_aws/wiring.py reads them from the template and
local_aws/background.py holds the threads that run beside them.
"""

from __future__ import annotations

import gc
import json
import secrets
import shutil
import socket
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import boto3

from local_aws import background, moto_patches, sdk_models, wiring
from local_aws.alarms import INSUFFICIENT, OK, ActionRun, AlarmDefinition, AlarmEvaluator
from local_aws.api import ApiServer, Route, throttle
from local_aws.capture import OutputCapture
from local_aws.converse_fake import FAKE as MODEL
from local_aws.deploy import ACCOUNT, LOCAL_API_ID, REGION, Deployment, deploy
from local_aws.functions import FunctionHost
from local_aws.graph_fake import GraphFake
from local_aws.iam import played
from local_aws.iam.enforcer import ENFORCER
from local_aws.iam.template import Grants, read_grants
from local_aws.log_filters import LineCounts
from local_aws.mappings import MappingPlayer
from local_aws.metrics import MetricsStore
from local_aws.on_call import INBOX_FILE, OnCallInbox, Page
from local_aws.process_state import ProcessState
from local_aws.queue_metrics import QueueSample
from local_aws.schedules import Scheduler
from local_aws.synth import SynthesizedApp, synthesize
from local_aws.ttl_reaper import enable_from_template
from local_aws.wiring import LaneView
from stacks.config.doors import WEBHOOK_ROUTE
from stacks.config.environments import ENVIRONMENTS, Environment
from stacks.runtime_env import lane_id

STAGE = "$default"
STOP_SECONDS = 2.0
"""How long a stop waits for running batches: `lanectl local` promises to be gone within 5 s."""


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class LocalRuntime:
    def __init__(
        self,
        env: Environment | None = None,
        *,
        api_port: int = 0,
        aws_port: int | None = 0,
        log_dir: Path | None = None,
        synthesized: SynthesizedApp | None = None,
        on_event: Callable[[str], None] | None = None,
        retention_seconds: int | None = None,
        webhook_throttle: tuple[float, int] | None = None,
    ) -> None:
        if retention_seconds is not None and retention_seconds < 1:
            raise ValueError(f"retention_seconds must be at least 1, got {retention_seconds}")
        self.env = env or ENVIRONMENTS["local"]
        self.retention_seconds = retention_seconds
        """Every kind of data kept this long instead of the environment's days (None: as deployed)."""
        self._route_settings = {} if webhook_throttle is None else {WEBHOOK_ROUTE: throttle(*webhook_throttle)}
        """The webhook route's throttle for this run (`--webhook-throttle`), over the stage's."""
        self._api_port = api_port or free_port()
        self._aws_port = None if aws_port is None else (aws_port or free_port())
        self._synthesized = synthesized
        self.capture = OutputCapture(log_dir=log_dir)
        self.metrics = MetricsStore()
        self.functions: dict[str, FunctionHost] = {}
        self.players: list[MappingPlayer] = []
        self.lanes: dict[str, LaneView] = {}
        self.events: list[str] = []
        self.errors: list[str] = []
        self._on_event = on_event
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self._process = ProcessState()
        self._mock: Any = None
        self._server: Any = None
        self.api: ApiServer | None = None
        self.scheduler: Scheduler | None = None
        self.alarms: AlarmEvaluator | None = None
        self.deployment: Deployment | None = None
        self.grants: Grants | None = None
        """What the deployed template allows, enforced on every function's calls (local_aws/iam/)."""
        self.started_at = 0.0
        self.inbox = OnCallInbox(
            None if log_dir is None else log_dir / INBOX_FILE, on_page=self._page, on_undeliverable=self.event
        )
        """What the on-call topic's subscribers at this machine received (local_aws/on_call.py)."""
        self.model = MODEL
        """The model every function's Converse calls reach (local_aws/converse_fake.py): its
        latency, failures and rate limit are set per run, and it records every call."""
        self.graph = GraphFake()
        """Meta's send APIs over HTTP on 127.0.0.1 (local_aws/graph_fake.py), with an outbox of
        every reply Meta accepted; the functions that send are pointed at it."""
        self.queue_samples: dict[str, QueueSample] = {}
        """Each queue's latest sample (a second old at most), for the live view."""

    # ------------------------------------------------------------------ lifecycle

    @property
    def api_url(self) -> str:
        return f"http://127.0.0.1:{self._api_port}"

    @property
    def aws_endpoint(self) -> str | None:
        return None if self._aws_port is None else f"http://127.0.0.1:{self._aws_port}"

    def __enter__(self) -> LocalRuntime:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self) -> None:
        self._process.enter_environment()
        synthesized = self._synthesized or synthesize(self.env)
        from moto import mock_aws

        moto_patches.install()
        self.model.reset()
        sdk_models.share()
        self._process.tune_interpreter()
        self._mock = mock_aws()
        self._mock.start()
        if self._aws_port is not None:
            from moto.server import ThreadedMotoServer

            self._server = ThreadedMotoServer(ip_address="127.0.0.1", port=self._aws_port, verbose=False)
            self._server.start()
        self.capture.install()
        self.capture.add_sink(self._record_metrics)
        try:
            self.deployment = deploy(synthesized, api_url=self.api_url)
        finally:
            if self._synthesized is None:
                # Deploy has read the function code; nothing of the synthesis is needed again.
                shutil.rmtree(synthesized.outdir, ignore_errors=True)
        self.grants = read_grants(self.deployment.template, self.deployment.resolver, account=ACCOUNT, region=REGION)
        ENFORCER.register(self.grants)
        self._clients = {
            name: boto3.client(name, region_name=REGION)  # type: ignore[call-overload]
            for name in ("lambda", "sqs", "sns", "cloudwatch", "dynamodb")
        }
        enable_from_template(synthesized.template, self.deployment.physical, self._clients["dynamodb"])
        self._serve_graph()
        if self.retention_seconds is not None:
            self._shorten_retention(self.retention_seconds)
        self.capture.add_sink(LineCounts(wiring.metric_filters(self.deployment), self.metrics.put).sink)
        self.functions.update(wiring.host_functions(self.deployment, self.capture, self.metrics))
        for refused in wiring.log_refusals(self.deployment, self.functions):
            self.error(refused)
        self._play_mappings()
        self._serve_api()
        self._run_schedules()
        self._evaluate_alarms()
        self.started_at = time.time()
        self._start_background()
        self.event(f"runtime up: API {self.api_url}, AWS endpoint {self.aws_endpoint or 'in-process only'}")

    def stop(self, within: float = STOP_SECONDS) -> None:
        self.quiesce(within)
        self.close()

    def quiesce(self, within: float = STOP_SECONDS) -> None:
        """Stop taking work at once, then give what runs `within` seconds in all to finish. The
        emulated backend stays up (a summary can still read it) until `close`.

        Under load a handler may still be running when this returns: like a Lambda whose
        environment is torn down mid-invocation, it is abandoned (its thread is a daemon), and
        what it had not committed comes back through the queue's visibility timeout next time."""
        if self._stop.is_set():
            return
        deadline = time.monotonic() + within
        self._stop.set()
        if self.api:
            self.api.stop()
        for player in self.players:
            player.signal_stop()
        if self.scheduler:
            self.scheduler.stop(timeout=0)
        for player in self.players:
            player.join(deadline - time.monotonic())
        for thread in self._threads:
            thread.join(timeout=max(0.0, deadline - time.monotonic()))
        # Invocations still running are daemon threads: abandoned here, as Lambda tears down an
        # environment mid-invocation.
        self.capture.seal()

    def close(self) -> None:
        """Take the emulated backend down and give the process its environment back."""
        self._process.restore_interpreter()
        if self.grants is not None:
            ENFORCER.unregister(self.grants)
        self.capture.uninstall()
        self.graph.stop()
        if self._server:
            self._server.stop()
        if self._mock:
            self._mock.stop()
        self._process.restore_environ()

    def _alarm_changed(self, alarm: AlarmDefinition, previous: str) -> None:
        # A new alarm settling from "no data yet" to OK is not news; every other change is.
        if (previous, alarm.state) != (INSUFFICIENT, OK):
            self.event(f"alarm {alarm.logical_id}: {previous} -> {alarm.state} ({alarm.reason})")

    def _alarm_action(self, alarm: AlarmDefinition, run: ActionRun) -> None:
        if run.error is not None:
            self.error(f"alarm {alarm.logical_id}: {run.summary}")

    def _page(self, page: Page) -> None:
        self.event(f"page to {page.endpoint}: {page.subject}")

    def _record_metrics(self, _function: str, line: str) -> None:
        self.metrics.record_emf(line)

    def event(self, text: str) -> None:
        stamped = f"{time.strftime('%H:%M:%S')} {text}"
        self.events.append(stamped)
        if self._on_event:
            self._on_event(stamped)

    def error(self, text: str) -> None:
        self.errors.append(text)
        self.event(f"error: {text}")

    # ------------------------------------------------------------------ wiring from the template

    def _serve_graph(self) -> None:
        """Meta's side of sending: the Graph API, an access token only it and the secret know, and
        the statuses it sends back signed with the app secret, as Meta signs its deliveries."""
        assert self.deployment is not None
        from local_aws.client import PipelineClient

        secrets_manager = boto3.client("secretsmanager", region_name=REGION)
        outputs = self.deployment.outputs
        token = "local-" + secrets.token_hex(16)
        secrets_manager.put_secret_value(
            SecretId=outputs["MetaAccessTokenArn"], SecretString=json.dumps({"access_token": token})
        )
        app_secret = json.loads(secrets_manager.get_secret_value(SecretId=outputs["MetaSecretArn"])["SecretString"])
        meta = PipelineClient(self.api_url, app_secret=str(app_secret.get("app_secret") or ""))
        self.graph.token = token
        self.graph.deliver = meta.deliver
        self.graph.on_sent = lambda sent: self.event(
            f"reply {sent.message_id} sent on {sent.channel} ({len(sent.text)} characters)"
            + (", its answer lost" if sent.answer_lost else "")
        )
        self.graph.start()
        wiring.point_at_graph(self.deployment, self._clients["lambda"], self.graph.url)

    def _shorten_retention(self, seconds: int) -> None:
        assert self.deployment is not None
        wiring.shorten_retention(self.deployment, self._clients["lambda"], seconds)
        self.event(f"retention shortened to {seconds} s for every kind of data (the emulated TTL deletes after it)")

    def _play_mappings(self) -> None:
        assert self.deployment is not None
        self.players.extend(wiring.mapping_players(self.deployment, self.functions, self._clients, self.error))
        self.lanes.update(wiring.lane_views(self.env, self.deployment.outputs, self.players))
        for player in self.players:
            player.start()

    def _serve_api(self) -> None:
        assert self.deployment is not None
        routes = wiring.api_routes(self.deployment, self.functions, self._route_settings)
        self.api = ApiServer(
            routes,
            port=self._api_port,
            on_request=self._on_request,
            refusal=lambda route, method: played.api_refusal(
                route.function.config.arn, LOCAL_API_ID, ACCOUNT, REGION, STAGE, method, route.path
            ),
            on_refused=self.error,
            on_answered=self._on_answered,
        )
        self.api.start()

    def _on_answered(self, route: Route, status: int) -> None:
        """API Gateway's own count per route (detailed metrics), which the route's 5xx alarm reads."""
        dimensions = {"ApiId": LOCAL_API_ID, "Stage": STAGE, "Method": route.method, "Resource": route.path}
        self.metrics.put("AWS/ApiGateway", "Count", dimensions, 1, "Count")
        self.metrics.put("AWS/ApiGateway", "5xx", dimensions, 1 if 500 <= status < 600 else 0, "Count")

    def _on_request(self, route: str, status: int, seconds: float) -> None:
        self.metrics.put("Local/API", "Requests", {"Route": route, "Status": str(status)}, 1, "Count")
        self.metrics.put("Local/API", "Latency", {"Route": route}, seconds * 1000, "Milliseconds")

    def _run_schedules(self) -> None:
        assert self.deployment is not None
        self.scheduler = Scheduler(
            wiring.scheduled_rules(self.deployment),
            invoke_async=self._invoke_async,
            send_to_queue=self._send_to_queue,
            on_error=self.error,
            refusal=played.rule_refusal,
        )
        self.scheduler.start()

    def _invoke_async(self, arn: str, event: dict[str, Any], retries: int) -> None:
        host = wiring.function_by_arn(self.functions, arn)

        def run() -> None:
            for _ in range(retries + 1):
                if host.invoke(event).ok or self._stop.is_set():
                    return

        threading.Thread(target=run, name="async-invoke", daemon=True).start()

    def _send_to_queue(self, arn: str, body: str) -> None:
        self._clients["sqs"].send_message(QueueUrl=wiring.queue_url(self._clients["sqs"], arn), MessageBody=body)

    def _evaluate_alarms(self) -> None:
        assert self.deployment is not None
        definitions = wiring.alarm_definitions(self.deployment)
        if definitions:
            # The store keeps what the alarms read: their longest look-back, and a period of slack.
            self.metrics.keep_for(max(a.period * (a.evaluation_periods + 1) for a in definitions))
        self.alarms = AlarmEvaluator(
            definitions,
            self.metrics,
            cloudwatch=self._clients["cloudwatch"],
            sns=self._clients["sns"],
            on_change=self._alarm_changed,
            refusal=played.alarm_action_refusal,
            rule_refusal=played.rule_publish_refusal,
            on_action=self._alarm_action,
            deliver=self.inbox.deliver,
        )
        self.alarms.create_in_moto()
        for lane in self.lanes.values():
            lane.alarms = [a for a in definitions if a.logical_id.startswith(f"{lane_id(lane.name)}Lane")]

    # ------------------------------------------------------------------ background threads

    def _background(self, target: Callable[[], None], name: str) -> None:
        thread = threading.Thread(target=target, name=name, daemon=True)
        self._threads.append(thread)
        thread.start()

    def _start_background(self) -> None:
        alarms = self.alarms
        assert alarms is not None
        stop = self._stop
        self._background(
            lambda: background.sample_queues(
                stop, self.metrics, self.queue_names(), alarms, self._keep_samples, self.error
            ),
            "metrics",
        )
        self._background(
            lambda: background.publish_metrics(stop, self.metrics, self._clients["cloudwatch"], self.error),
            "metrics-publish",
        )
        gc.collect()
        gc.freeze()
        self._background(lambda: background.collect_garbage(stop), "collector")
        self._background(
            lambda: background.follow_configuration(stop, self.functions.values(), self.event, self.error), "config"
        )
        self._background(lambda: background.reap_expired(stop, self.error), "ttl")

    def _keep_samples(self, samples: dict[str, QueueSample]) -> None:
        self.queue_samples = samples

    def queue_names(self) -> list[str]:
        assert self.deployment is not None
        return wiring.queue_names(self.deployment)
