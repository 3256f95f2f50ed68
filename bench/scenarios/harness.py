"""One local runtime per scenario, driven as its users and its operators would drive it.

`Harness` synthesizes the `local` app once per process (about 6 s) and starts a fresh runtime for
every `session()`, deployed from that cached template (a second or two). A `Session` talks to the
pipeline only through its doors (HTTP: signed webhooks, SigV4 jobs), reads state the way an
operator would (DynamoDB and SQS APIs of the emulator, the runtime's metrics and mapping stats,
the functions' JSON log lines), and changes behaviour only as an operator could: a function's
environment through UpdateFunctionConfiguration, a mapping through UpdateEventSourceMapping, a
queue's attributes through SetQueueAttributes. Nothing inside the pipeline is called directly.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from ops.runtime.capture import PassthroughStream

REGION = "us-east-1"
CONFIG_ADOPTION_SECONDS = 10.0
MAPPING_REFRESH_SECONDS = 1.3
"""The runtime's pollers re-read their mapping every second."""


def parse_log_time(text: str) -> float:
    """Powertools' `timestamp` field ("2025-01-01 10:00:00,123+0000") as epoch seconds."""
    return datetime.strptime(text, "%Y-%m-%d %H:%M:%S,%f%z").timestamp()


@dataclass(frozen=True)
class RecordLine:
    """One consumer outcome line (`record <outcome>`), as the function logged it."""

    at: float
    lane: str
    tenant: str
    kind: str
    id: str
    outcome: str
    attempt: int
    receive_count: int
    deferrals: int
    queued_seconds: float | None
    reason: str | None
    raw: Mapping[str, Any]


class LineLog:
    """Every structured line every function printed, kept whole (the runtime keeps the last few
    thousand per function; a scenario needs all of its own)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.records: list[RecordLine] = []
        self.other: list[tuple[str, dict[str, Any]]] = []
        self.first_terminal: dict[str, RecordLine] = {}
        """The first terminal outcome line per work id, as it arrives."""

    def sink(self, function: str, line: str) -> None:
        if not line.startswith("{") or '"_aws"' in line:
            return
        try:
            parsed = json.loads(line)
        except json.JSONDecodeError:
            return
        if not isinstance(parsed, dict):
            return
        message = str(parsed.get("message", ""))
        with self._lock:
            if "outcome" in parsed and (message.startswith("record ") or parsed["outcome"] == "would_defer"):
                record = RecordLine(
                    at=parse_log_time(parsed["timestamp"]),
                    lane=str(parsed.get("lane", "")),
                    tenant=str(parsed.get("tenant", "")),
                    kind=str(parsed.get("kind", "")),
                    id=str(parsed.get("id", "")),
                    outcome=str(parsed["outcome"]),
                    attempt=int(parsed.get("attempt") or 0),
                    receive_count=int(parsed.get("receive_count") or 1),
                    deferrals=int(parsed.get("deferrals") or 0),
                    queued_seconds=parsed.get("queued_seconds"),
                    reason=parsed.get("reason"),
                    raw=parsed,
                )
                self.records.append(record)
                if record.outcome in TERMINAL:
                    self.first_terminal.setdefault(record.id, record)
            else:
                self.other.append((function, parsed))

    def outcomes(
        self, *, lane: str | None = None, outcome: str | None = None, ids: set[str] | None = None
    ) -> list[RecordLine]:
        with self._lock:
            lines = list(self.records)
        return [
            r
            for r in lines
            if (lane is None or r.lane == lane)
            and (outcome is None or r.outcome == outcome)
            and (ids is None or r.id in ids)
        ]

    def lines(self, predicate: Callable[[str, dict[str, Any]], bool]) -> list[tuple[str, dict[str, Any]]]:
        with self._lock:
            lines = list(self.other)
        return [(f, p) for f, p in lines if predicate(f, p)]

    def finished(self, tenants: set[str], lane: str | None = None) -> dict[str, RecordLine]:
        """The first terminal outcome line per work id of these tenants."""
        with self._lock:
            lines = list(self.records)
        first: dict[str, RecordLine] = {}
        for r in lines:
            if r.tenant in tenants and r.outcome in TERMINAL and (lane is None or r.lane == lane):
                first.setdefault(r.id, r)
        return first


TERMINAL = frozenset({"done", "duplicate", "superseded", "expired", "dead_lettered"})


def fan_out(work: list[Callable[[], Any]], threads: int) -> list[Any]:
    """Run callables on a few threads (a producer with `threads` connections); results in order."""
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=max(1, threads), thread_name_prefix="producer") as pool:
        return list(pool.map(lambda fn: fn(), work))


class _StrayLines(PassthroughStream):
    """Stands in for stdout while a runtime runs. The runtime routes each function's output by the
    thread it comes from; a task's own worker thread (the consumer runs tasks under a time limit on
    a thread of their own) is not bound to its function, so its JSON log lines would reach the
    terminal. They are kept with the session's lines instead; anything else passes through."""

    def __init__(self, passthrough: Any) -> None:
        super().__init__(passthrough)
        self.sinks: list[Callable[[str, str], None]] = []
        self._partial: dict[int, str] = {}

    def write(self, text: str) -> int:
        key = threading.get_ident()
        *lines, rest = (self._partial.pop(key, "") + text).split("\n")
        if rest:
            self._partial[key] = rest
        for line in lines:
            if line.startswith("{"):
                for sink in self.sinks:
                    sink("(task thread)", line)
            else:
                self._passthrough.write(line + "\n")
        return len(text)


class Harness:
    """Synthesizes once; starts a fresh runtime per session."""

    def __init__(self, *, plot_dir: Path | None = None, quiet: bool = True) -> None:
        self.plot_dir = plot_dir
        self.quiet = quiet
        self._synthesized: Any = None

    @property
    def synthesized(self) -> Any:
        if self._synthesized is None:
            os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")
            from ops.runtime.synth import synthesize
            from stacks.config.environments import ENVIRONMENTS

            self._synthesized = synthesize(ENVIRONMENTS["local"])
        return self._synthesized

    @contextlib.contextmanager
    def session(self, *, cli: bool = False) -> Iterator[Session]:
        """A fresh runtime. `cli=True` also serves the emulator on a port, for `lanectl`."""
        from ops.runtime.runtime import LocalRuntime

        logging.getLogger("werkzeug").setLevel(logging.CRITICAL)
        synthesized = self.synthesized
        _keep_function_logs_to_themselves(synthesized.env)
        stray = _StrayLines(sys.stdout)
        saved = sys.stdout
        sys.stdout = stray  # type: ignore[assignment]
        runtime = LocalRuntime(synthesized=synthesized, aws_port=0 if cli else None)
        try:
            runtime.start()
            _rebind_log_streams(synthesized.env)
            session = Session(runtime)
            stray.sinks.append(session.log.sink)
            try:
                yield session
            finally:
                # No new batches (each poller finishes its current long poll), then let the
                # invocations already running finish before the backend goes away.
                for player in runtime.players:
                    player.signal_stop()
                for player in runtime.players:
                    player.join(timeout=5)
                session.settle(timeout=15)
                runtime.stop()
        finally:
            sys.stdout = saved
            _share_function_logs_again(synthesized.env)


def _keep_function_logs_to_themselves(env: Any) -> None:
    """A function's Powertools logger writes to its own stream, as on Lambda. As a named `logging`
    logger it would also propagate every record to the host process's root logger (pytest's log
    capture, when the scenarios run as tests), which formats each one again: enough extra work to
    change the timings measured. The loggers are made before the functions' cold starts create
    them, so Powertools picks them up as they are."""
    for name in _function_services(env):
        logging.getLogger(name).propagate = False


def _function_services(env: Any) -> list[str]:
    """The Powertools service names (and so `logging` logger names) of the functions."""
    return ["ingress", "jobs", "sweeper", *(f"consumer-{lane.name}" for lane in env.lanes)]


def _share_function_logs_again(env: Any) -> None:
    """Undo `_keep_function_logs_to_themselves` once the runtime is gone, so that anything else in
    the process using the same loggers (the unit tests, in one pytest process, read them through
    caplog) finds them propagating as `logging` made them."""
    for name in _function_services(env):
        logging.getLogger(name).propagate = True


def _rebind_log_streams(env: Any) -> None:
    """Point the functions' logging stream handlers (and any other bound to an earlier runtime) at
    the current stdout, this runtime's output capture.

    Powertools' Logger is a named `logging` logger whose stream handler keeps the `sys.stdout` of
    the moment it was first created: an earlier runtime's capture, or, in a pytest process, the
    capture of whichever test first made a logger of that name. This runtime would otherwise never
    see those functions' log lines. See the report's notes on the local runtime."""
    functions = set(_function_services(env))
    for name, logger in list(logging.Logger.manager.loggerDict.items()):
        for handler in getattr(logger, "handlers", []):
            if type(handler) is logging.StreamHandler and (name in functions or hasattr(handler.stream, "_capture")):
                handler.setStream(sys.stdout)


class Session:
    def __init__(self, runtime: Any) -> None:
        import boto3

        from ops.runtime.client import PipelineClient

        self.runtime = runtime
        self.outputs: dict[str, str] = dict(runtime.deployment.outputs)
        self.log = LineLog()
        runtime.capture.add_sink(self.log.sink)
        self._boto = boto3.session.Session(region_name=REGION)
        self._clients: dict[str, Any] = {}
        secret = json.loads(
            self.aws("secretsmanager").get_secret_value(SecretId=self.outputs["MetaSecretArn"])["SecretString"]
        )
        self.verify_token = secret["verify_token"]
        self.client = PipelineClient(runtime.api_url, app_secret=secret["app_secret"])
        self.started = time.time()

    # ------------------------------------------------------------------ AWS, as an operator reads it

    def aws(self, service: str) -> Any:
        client = self._clients.get(service)
        if client is None:
            client = self._boto.client(service)
            self._clients[service] = client
        return client

    def function_name(self, role: str) -> str:
        """`ingress`, `jobs`, `sweeper`, or a lane name."""
        if role in ("ingress", "jobs", "sweeper"):
            suffix = {"ingress": ".ingress.handler", "jobs": ".jobs.handler", "sweeper": ".sweeper.handler"}[role]
            (name,) = [h.config.name for h in self.runtime.functions.values() if h.config.handler.endswith(suffix)]
            return name
        return self.outputs[f"{role.capitalize()}FunctionName"]

    def host(self, role: str) -> Any:
        name = self.function_name(role)
        (host,) = [h for h in self.runtime.functions.values() if h.config.name == name]
        return host

    def queue_url(self, lane: str, *, dlq: bool = False) -> str:
        return self.outputs[f"{lane.capitalize()}{'DlqUrl' if dlq else 'QueueUrl'}"]

    def depth(self, lane: str, *, dlq: bool = False) -> Any:
        """Visible, in flight, delayed and the oldest message's age, read from the emulator's queue
        the way CloudWatch reads SQS (no receive)."""
        from ops.runtime.queue_metrics import sample

        return sample(self.queue_url(lane, dlq=dlq).rsplit("/", 1)[1])

    def oldest_dead_letter_sent(self, lane: str) -> float | None:
        """When the oldest message now in the lane's DLQ was sent there (epoch seconds), from the
        queue's age of oldest message; None when the DLQ is empty."""
        d = self.depth(lane, dlq=True)
        if d.visible + d.in_flight + d.delayed == 0:
            return None
        return time.time() - d.oldest_age_seconds

    def total_depth(self, lane: str) -> int:
        d = self.depth(lane)
        return int(d.visible + d.in_flight + d.delayed)

    def items(self, pk: str) -> list[dict[str, Any]]:
        from pipeline.adapters.items import from_item

        response = self.aws("dynamodb").query(
            TableName=self.outputs["DataTableName"],
            KeyConditionExpression="pk = :pk",
            ExpressionAttributeValues={":pk": {"S": pk}},
            ConsistentRead=True,
        )
        return [from_item(i) for i in response["Items"]]

    def item(self, table_output: str, key: Mapping[str, Any]) -> dict[str, Any] | None:
        from pipeline.adapters.items import from_item, to_item

        found = (
            self.aws("dynamodb")
            .get_item(
                TableName=self.outputs[table_output],
                Key=to_item(dict(key)),
                ConsistentRead=True,
            )
            .get("Item")
        )
        return from_item(found) if found else None

    def scan(self, table_output: str) -> list[dict[str, Any]]:
        from pipeline.adapters.items import from_item

        dynamodb = self.aws("dynamodb")
        found: list[dict[str, Any]] = []
        kwargs: dict[str, Any] = {"TableName": self.outputs[table_output], "ConsistentRead": True}
        while True:
            page = dynamodb.scan(**kwargs)
            found.extend(from_item(i) for i in page["Items"])
            if "LastEvaluatedKey" not in page:
                return found
            kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]

    # ------------------------------------------------------------------ operator changes

    def update_environment(self, role: str, change: Callable[[dict[str, str]], None]) -> None:
        self.update_environments({role: change})

    def update_environments(self, changes: Mapping[str, Callable[[dict[str, str]], None]]) -> None:
        """UpdateFunctionConfiguration with a changed environment for each function, then make sure
        the runtime has adopted them all. The runtime re-reads every configuration every two seconds
        and retires the warm instances, as a deploy would; the harness hands it the new
        configuration at once (the same FunctionHost.reconfigure call) to save those seconds."""
        from ops.runtime.functions import FunctionConfig

        lambda_ = self.aws("lambda")
        expected: dict[str, dict[str, str]] = {}
        hosts = {}
        for role, change in changes.items():
            name = self.function_name(role)
            variables = dict(lambda_.get_function_configuration(FunctionName=name)["Environment"]["Variables"])
            change(variables)
            updated = lambda_.update_function_configuration(FunctionName=name, Environment={"Variables": variables})
            expected[role] = variables
            hosts[role] = self.host(role)
            hosts[role].reconfigure(FunctionConfig.from_moto(updated))
        wait_for(
            lambda: all(dict(hosts[role].config.environment) == variables for role, variables in expected.items()),
            CONFIG_ADOPTION_SECONDS,
            what=f"configuration of {', '.join(expected)}",
        )

    def set_timeout(self, role: str, seconds: int) -> None:
        """UpdateFunctionConfiguration(Timeout=...), adopted at once like an environment change."""
        from ops.runtime.functions import FunctionConfig

        updated = self.aws("lambda").update_function_configuration(
            FunctionName=self.function_name(role), Timeout=seconds
        )
        self.host(role).reconfigure(FunctionConfig.from_moto(updated))

    def configure_lane(self, lane: str, *, options: Mapping[str, str | None] | None = None, **settings: Any) -> None:
        """Change a consumer's LANE settings (and task options; None removes an option)."""
        self.configure_lanes([lane], options=options, **settings)

    def configure_lanes(
        self, lanes: list[str], *, options: Mapping[str, str | None] | None = None, **settings: Any
    ) -> None:
        def change(variables: dict[str, str]) -> None:
            current = json.loads(variables["LANE"])
            current.update(settings)
            merged = dict(current.get("options") or {})
            for key, value in (options or {}).items():
                if value is None:
                    merged.pop(key, None)
                else:
                    merged[key] = value
            current["options"] = merged
            variables["LANE"] = json.dumps(current, separators=(",", ":"))

        self.update_environments(dict.fromkeys(lanes, change))

    def configure_dependency(self, lanes: list[str], *, mode: str) -> None:
        """The shared dependency budget's mode (enforce/observe), on every consumer that holds it."""

        def change(variables: dict[str, str]) -> None:
            dependencies = json.loads(variables["DEPENDENCIES"])
            for value in dependencies.values():
                value["mode"] = mode
            variables["DEPENDENCIES"] = json.dumps(dependencies, separators=(",", ":"))

        self.update_environments(dict.fromkeys(lanes, change))

    def set_mapping(
        self,
        lane: str,
        *,
        max_concurrency: int | None = None,
        enabled: bool | None = None,
        window_seconds: int | None = None,
    ) -> None:
        kwargs: dict[str, Any] = {"UUID": self.outputs[f"{lane.capitalize()}MappingId"]}
        if max_concurrency is not None:
            kwargs["ScalingConfig"] = {"MaximumConcurrency": max_concurrency}
        if window_seconds is not None:
            kwargs["MaximumBatchingWindowInSeconds"] = window_seconds
        if enabled is not None:
            kwargs["Enabled"] = enabled
        self.aws("lambda").update_event_source_mapping(**kwargs)
        time.sleep(MAPPING_REFRESH_SECONDS)

    def lane_view(self, lane: str) -> Any:
        return self.runtime.lanes[lane]

    def set_queue_attributes(self, lane: str, attributes: Mapping[str, str]) -> dict[str, str]:
        """SetQueueAttributes on a lane's queue; returns the previous values of those attributes."""
        sqs = self.aws("sqs")
        url = self.queue_url(lane)
        before = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=list(attributes))["Attributes"]
        sqs.set_queue_attributes(QueueUrl=url, Attributes=dict(attributes))
        return dict(before)

    def set_fairness(self, lane: str, fairness: Any) -> Any:
        """The fair-queue thresholds of a lane's queue (ops/runtime/fair_groups.py), as the runtime
        holds it; returns the previous ones. `fair_groups.OFF` makes it a queue without fairness."""
        from ops.runtime.moto_sqs import index_of

        index = index_of(self.runtime_queue(lane))
        previous = index.groups.fairness
        index.groups.fairness = fairness
        return previous

    def runtime_queue(self, lane: str) -> Any:
        from moto.sqs.models import sqs_backends

        from ops.runtime.deploy import ACCOUNT

        return sqs_backends[ACCOUNT][REGION].queues[self.lane_view(lane).queue_name]

    def alarm(self, logical_prefix: str) -> Any:
        (found,) = [a for a in self.runtime.alarms.alarms if a.logical_id.startswith(logical_prefix)]
        return found

    def alarm_fired_at(self, logical_prefix: str, after: float) -> float | None:
        """When the alarm last went to ALARM at or after `after` (epoch seconds)."""
        for at, _previous, state, _reason in self.alarm(logical_prefix).history:
            if state == "ALARM" and at >= after:
                return float(at)
        return None

    # ------------------------------------------------------------------ waiting

    def settle(self, timeout: float = 30.0) -> bool:
        """Wait until no invocation is running (abandoned task threads may still finish late)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if all(h.stats.in_flight == 0 for h in self.runtime.functions.values()):
                return True
            time.sleep(0.2)
        return False

    def lanes_empty(self, *lanes: str) -> bool:
        return all(self.total_depth(lane) == 0 for lane in lanes)

    @property
    def errors(self) -> list[str]:
        return list(self.runtime.errors)


def calm(call: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """Call the emulator's SQS, retrying the error moto raises when a call races a change to the
    same queue in another thread ("dictionary changed size during iteration"); AWS has no such
    failure. (DynamoDB calls take the runtime's lock instead: ops/runtime/moto_patches.py. SQS
    calls cannot: a long poll would hold it for seconds.)"""
    for _ in range(9):
        try:
            return call(*args, **kwargs)
        except RuntimeError as exc:
            if "changed size during iteration" not in str(exc):
                raise
            time.sleep(0.05)
    return call(*args, **kwargs)


def wait_for(predicate: Callable[[], Any], timeout: float, *, interval: float = 0.2, what: str = "condition") -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() >= deadline:
            raise TimeoutError(f"timed out after {timeout:.0f} s waiting for {what}")
        time.sleep(interval)


def poll(predicate: Callable[[], Any], timeout: float, *, interval: float = 0.25) -> Any:
    """Like wait_for, but returns the last value instead of raising."""
    deadline = time.monotonic() + timeout
    value = predicate()
    while not value and time.monotonic() < deadline:
        time.sleep(interval)
        value = predicate()
    return value


@dataclass
class Sampler:
    """Samples named gauges every `interval` seconds on a background thread (a time series for the
    plots: queue depth, consumers in flight, ...)."""

    gauges: Mapping[str, Callable[[], float]]
    interval: float = 0.25
    times: list[float] = field(default_factory=list)
    values: dict[str, list[float]] = field(default_factory=dict)
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def __enter__(self) -> Sampler:
        self.values = {name: [] for name in self.gauges}
        self._thread = threading.Thread(target=self._loop, name="scenario-sampler", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def _loop(self) -> None:
        while not self._stop.is_set():
            now = time.time()
            row = {}
            try:
                row = {name: float(gauge()) for name, gauge in self.gauges.items()}
            except Exception:  # a gauge read racing a queue change: skip this sample
                row = {}
            if row:
                self.times.append(now)
                for name, value in row.items():
                    self.values[name].append(value)
            self._stop.wait(self.interval)

    def peak(self, name: str) -> float:
        return max(self.values.get(name) or [0.0])
