"""The local runtime: the `local` environment's template, deployed into moto and played.

    with LocalRuntime() as runtime:
        requests.post(runtime.api_url + "/webhooks/meta", ...)

Handlers inside the runtime reach moto in-process; tools in other processes (the operator CLI
with `--env local`) reach the same backend through moto's server mode on `aws_endpoint`.
"""

from __future__ import annotations

import gc
import json
import logging
import os
import shutil
import socket
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import boto3

from ops.runtime import fairness, lambda_control, moto_patches, moto_sqs, sdk_models
from ops.runtime.alarms import INSUFFICIENT, OK, AlarmDefinition, AlarmEvaluator
from ops.runtime.api import ApiServer, Route, route_throttles
from ops.runtime.capture import OutputCapture
from ops.runtime.deploy import REGION, Deployment, deploy
from ops.runtime.functions import FunctionConfig, FunctionHost
from ops.runtime.intrinsics import references
from ops.runtime.mappings import MappingPlayer
from ops.runtime.metrics import MetricsStore, publish_to_cloudwatch, trim_cloudwatch
from ops.runtime.queue_metrics import QueueSample
from ops.runtime.queue_metrics import record as record_queue_metrics
from ops.runtime.schedules import ScheduledRule, Scheduler, period_seconds
from ops.runtime.synth import SynthesizedApp, synthesize
from ops.runtime.ttl_reaper import TtlReaper, enable_from_template
from pipeline.settings import EnvVar
from stacks.config.environments import ENVIRONMENTS, Environment
from stacks.runtime_env import lane_id

RETENTION_VARIABLE = EnvVar.RETENTION

FAKE_CREDENTIALS = {
    "AWS_ACCESS_KEY_ID": "local",
    "AWS_SECRET_ACCESS_KEY": "local",
    "AWS_SESSION_TOKEN": "local",
    "AWS_DEFAULT_REGION": REGION,
    "AWS_REGION": REGION,
}
SAMPLE_SECONDS = 1.0
PUBLISH_SECONDS = 5.0
TRIM_SECONDS = 60.0
SWITCH_INTERVAL_SECONDS = 0.001
COLLECT_SECONDS = 20.0
STOP_SECONDS = 2.0
"""How long a stop waits for running batches: `lanectl local` promises to be gone within 5 s."""
CONFIG_REFRESH_SECONDS = 2.0
REAP_SECONDS = 10.0
"""How often expired items are deleted (DynamoDB's TTL takes up to days; memory wants sooner)."""


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@dataclass
class LaneView:
    """What the runtime knows about one lane, by the stack's output names."""

    name: str
    queue_url: str
    dlq_url: str
    function: FunctionHost
    player: MappingPlayer
    alarms: list[AlarmDefinition] = field(default_factory=list)

    @property
    def queue_name(self) -> str:
        return self.queue_url.rsplit("/", 1)[1]

    @property
    def dlq_name(self) -> str:
        return self.dlq_url.rsplit("/", 1)[1]


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
    ) -> None:
        if retention_seconds is not None and retention_seconds < 1:
            raise ValueError(f"retention_seconds must be at least 1, got {retention_seconds}")
        self.env = env or ENVIRONMENTS["local"]
        self.retention_seconds = retention_seconds
        """Every kind of data kept this long instead of the environment's days (None: as deployed)."""
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
        self._saved_environ: dict[str, str | None] = {}
        self._mock: Any = None
        self._server: Any = None
        self.api: ApiServer | None = None
        self.scheduler: Scheduler | None = None
        self.alarms: AlarmEvaluator | None = None
        self.deployment: Deployment | None = None
        self.started_at = 0.0
        self.queue_samples: dict[str, QueueSample] = {}
        """Each queue's latest sample (a second old at most), for the live view."""
        self._saved_switch_interval = sys.getswitchinterval()
        self._saved_fairness = fairness.AWS

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
        # moto's server answers an action it has not implemented (StartMessageMoveTask, say) with a
        # 500 and logs the traceback; the caller sees the 500 and falls back, so keep the log quiet.
        logging.getLogger("werkzeug").setLevel(logging.CRITICAL)
        self._set_environ(FAKE_CREDENTIALS)
        synthesized = self._synthesized or synthesize(self.env)
        from moto import mock_aws

        moto_patches.install()
        sdk_models.share()
        # The lanes' queues are fair queues on clocks scaled to this environment's seconds.
        self._saved_fairness = moto_sqs.use_fairness(fairness.LOCAL)
        # Every function shares this interpreter's lock; a door request waiting behind consumer
        # batches gets it back sooner with shorter slices (measured: see bench/REPORT.md, soak).
        self._saved_switch_interval = sys.getswitchinterval()
        sys.setswitchinterval(SWITCH_INTERVAL_SECONDS)
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
        self._clients = {
            name: boto3.client(name, region_name=REGION)  # type: ignore[call-overload]
            for name in ("lambda", "sqs", "sns", "cloudwatch", "dynamodb")
        }
        enable_from_template(synthesized.template, self.deployment.physical, self._clients["dynamodb"])
        if self.retention_seconds is not None:
            self._shorten_retention(self.retention_seconds)
        self._host_functions()
        self._play_mappings()
        self._serve_api()
        self._run_schedules()
        self._evaluate_alarms()
        self.started_at = time.time()
        self._background(self._sample_loop, "metrics")
        self._background(self._publish_loop, "metrics-publish")
        gc.collect()
        gc.freeze()
        self._background(self._collector_loop, "collector")
        self._background(self._config_loop, "config")
        self._background(self._reap_loop, "ttl")
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
        gc.unfreeze()
        sys.setswitchinterval(self._saved_switch_interval)
        moto_sqs.use_fairness(self._saved_fairness)
        self.capture.uninstall()
        if self._server:
            self._server.stop()
        if self._mock:
            self._mock.stop()
        for name, value in self._saved_environ.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value

    def _alarm_changed(self, alarm: AlarmDefinition, previous: str) -> None:
        # A new alarm settling from "no data yet" to OK is not news; every other change is.
        if (previous, alarm.state) != (INSUFFICIENT, OK):
            self.event(f"alarm {alarm.logical_id}: {previous} -> {alarm.state} ({alarm.reason})")

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

    def _set_environ(self, values: dict[str, str]) -> None:
        for name, value in values.items():
            self._saved_environ.setdefault(name, os.environ.get(name))
            os.environ[name] = value

    def _host_functions(self) -> None:
        assert self.deployment is not None
        for logical_id in self.deployment.resources("AWS::Lambda::Function"):
            name = self.deployment.physical[logical_id]
            configuration = lambda_control.function_configuration(name)
            self.functions[logical_id] = FunctionHost(
                FunctionConfig.from_moto(configuration), capture=self.capture, metrics=self.metrics
            )

    def _shorten_retention(self, seconds: int) -> None:
        """Tell every function that stamps expiries to keep data `seconds`, as a deploy of an
        environment with that retention would (the function configuration shows it)."""
        assert self.deployment is not None
        client = self._clients["lambda"]
        for logical_id in self.deployment.resources("AWS::Lambda::Function"):
            name = self.deployment.physical[logical_id]
            variables = dict(
                (lambda_control.function_configuration(name).get("Environment") or {}).get("Variables", {})
            )
            if RETENTION_VARIABLE not in variables:
                continue
            periods = json.loads(variables[RETENTION_VARIABLE])
            variables[RETENTION_VARIABLE] = json.dumps(dict.fromkeys(periods, seconds))
            client.update_function_configuration(FunctionName=name, Environment={"Variables": variables})
        self.event(f"retention shortened to {seconds} s for every kind of data (the emulated TTL deletes after it)")

    def _function_by_arn(self, arn: str) -> FunctionHost:
        for host in self.functions.values():
            if host.config.arn == arn or host.config.name == arn.rsplit(":", 1)[-1]:
                return host
        raise KeyError(f"no function {arn}")

    def _queue_url(self, arn: str) -> str:
        return str(self._clients["sqs"].get_queue_url(QueueName=arn.rsplit(":", 1)[1])["QueueUrl"])

    def _play_mappings(self) -> None:
        assert self.deployment is not None
        outputs = self.deployment.outputs
        for logical_id, resource in self.deployment.resources("AWS::Lambda::EventSourceMapping").items():
            properties = self.deployment.resolve(resource["Properties"])
            queue_arn = properties["EventSourceArn"]
            player = MappingPlayer(
                uuid=self.deployment.physical[logical_id],
                queue_url=self._queue_url(queue_arn),
                queue_arn=queue_arn,
                function=self._function_by_arn(properties["FunctionName"]),
                lambda_client=self._clients["lambda"],
                sqs_client=self._clients["sqs"],
                on_error=self.error,
                read_mapping=lambda_control.mapping_configuration,
            )
            self.players.append(player)
        for lane in self.env.lanes:
            prefix = lane_id(lane.name)
            (player,) = [p for p in self.players if p.uuid == outputs[f"{prefix}MappingId"]]
            self.lanes[lane.name] = LaneView(
                name=lane.name,
                queue_url=outputs[f"{prefix}QueueUrl"],
                dlq_url=outputs[f"{prefix}DlqUrl"],
                function=player.function,
                player=player,
            )
        for player in self.players:
            player.start()

    def _serve_api(self) -> None:
        assert self.deployment is not None
        integrations = self.deployment.resources("AWS::ApiGatewayV2::Integration")
        (stage,) = self.deployment.resources("AWS::ApiGatewayV2::Stage").values()
        throttle_for = route_throttles(stage["Properties"])
        routes = []
        for resource in self.deployment.resources("AWS::ApiGatewayV2::Route").values():
            properties = resource["Properties"]
            (integration_id,) = references(properties["Target"]) & set(integrations)
            uri = self.deployment.resolve(integrations[integration_id]["Properties"]["IntegrationUri"])
            method, path = properties["RouteKey"].split(" ", 1)
            routes.append(
                Route(
                    method=method,
                    path=path,
                    function=self._function_by_arn(uri),
                    iam=properties.get("AuthorizationType") == "AWS_IAM",
                    throttle=throttle_for(properties["RouteKey"]),
                )
            )
        self.api = ApiServer(routes, port=self._api_port, on_request=self._on_request)
        self.api.start()

    def _on_request(self, route: str, status: int, seconds: float) -> None:
        self.metrics.put("Local/API", "Requests", {"Route": route, "Status": str(status)}, 1, "Count")
        self.metrics.put("Local/API", "Latency", {"Route": route}, seconds * 1000, "Milliseconds")

    def _run_schedules(self) -> None:
        assert self.deployment is not None
        rules = []
        for logical_id, resource in self.deployment.resources("AWS::Events::Rule").items():
            if "ScheduleExpression" not in resource["Properties"]:
                continue
            targets = self.deployment.resolve(resource["Properties"].get("Targets", []))
            arn = f"arn:aws:events:{REGION}:rule/{self.deployment.physical[logical_id]}"
            rules.append(ScheduledRule(logical_id, arn, period_seconds(resource), targets))
        self.scheduler = Scheduler(
            rules, invoke_async=self._invoke_async, send_to_queue=self._send_to_queue, on_error=self.error
        )
        self.scheduler.start()

    def _invoke_async(self, arn: str, event: dict[str, Any], retries: int) -> None:
        host = self._function_by_arn(arn)

        def run() -> None:
            for _ in range(retries + 1):
                if host.invoke(event).ok or self._stop.is_set():
                    return

        threading.Thread(target=run, name="async-invoke", daemon=True).start()

    def _send_to_queue(self, arn: str, body: str) -> None:
        self._clients["sqs"].send_message(QueueUrl=self._queue_url(arn), MessageBody=body)

    def _evaluate_alarms(self) -> None:
        assert self.deployment is not None
        definitions = []
        for logical_id, resource in self.deployment.resources("AWS::CloudWatch::Alarm").items():
            properties = self.deployment.resolve(resource["Properties"])
            definitions.append(AlarmDefinition.from_template(logical_id, properties, self.deployment.app.stack_name))
        self.alarms = AlarmEvaluator(
            definitions,
            self.metrics,
            cloudwatch=self._clients["cloudwatch"],
            sns=self._clients["sns"],
            on_change=self._alarm_changed,
        )
        self.alarms.create_in_moto()
        for lane in self.lanes.values():
            lane.alarms = [a for a in definitions if a.logical_id.startswith(f"{lane_id(lane.name)}Lane")]

    # ------------------------------------------------------------------ background loops

    def _background(self, target: Callable[[], None], name: str) -> None:
        thread = threading.Thread(target=target, name=name, daemon=True)
        self._threads.append(thread)
        thread.start()

    def queue_names(self) -> list[str]:
        assert self.deployment is not None
        return [
            url.rsplit("/", 1)[1]
            for url in (self.deployment.physical[k] for k in self.deployment.resources("AWS::SQS::Queue"))
        ]

    def _sample_loop(self) -> None:
        """SQS's metrics every second and the alarms on them. Nothing slow runs on this thread
        (mirroring to CloudWatch has its own), so an alarm never sees a live queue as missing
        data because a publish was slow."""
        names = self.queue_names()
        while not self._stop.wait(SAMPLE_SECONDS):
            try:
                self.queue_samples = record_queue_metrics(self.metrics, names)
                assert self.alarms is not None
                self.alarms.evaluate_all()
            except Exception as exc:
                self.error(f"metrics: {type(exc).__name__}: {exc}")

    def _collector_loop(self) -> None:
        """Keep the cyclic garbage collector's pauses short as the emulated tables grow.

        A full collection walks every object the process holds; the tables' items are most of
        them, so the soak's door p99 had spikes of 1.8 to 2.5 s, a minute apart and growing with
        the data. Every period, what survived a collection is frozen (left out of later ones): a
        collection then walks only what was made since. Frozen objects are still freed as usual
        when nothing refers to them; only a reference cycle among them would outlive the run."""
        while not self._stop.wait(COLLECT_SECONDS):
            gc.collect()
            gc.freeze()

    def _publish_loop(self) -> None:
        last_trim = time.monotonic()
        while not self._stop.wait(PUBLISH_SECONDS):
            try:
                publish_to_cloudwatch(self.metrics, self._clients["cloudwatch"])
                if time.monotonic() - last_trim >= TRIM_SECONDS:
                    trim_cloudwatch()
                    last_trim = time.monotonic()
            except Exception as exc:
                self.error(f"metrics publish: {type(exc).__name__}: {exc}")

    def _reap_loop(self) -> None:
        from moto.core import DEFAULT_ACCOUNT_ID

        reaper = TtlReaper(DEFAULT_ACCOUNT_ID, REGION)
        while not self._stop.wait(REAP_SECONDS):
            try:
                reaper.reap()
            except Exception as exc:
                self.error(f"ttl: {type(exc).__name__}: {exc}")

    def _config_loop(self) -> None:
        """Adopt configuration changes made through the moto server, as a deploy would."""
        while not self._stop.wait(CONFIG_REFRESH_SECONDS):
            for host in self.functions.values():
                try:
                    configuration = lambda_control.function_configuration(host.config.name)
                    if host.reconfigure(FunctionConfig.from_moto(configuration)):
                        self.event(f"{host.config.name}: configuration changed; warm instances retired")
                except Exception as exc:
                    self.error(f"config refresh: {type(exc).__name__}: {exc}")
