"""Lambda's part: run a deployed function's handler with the configuration moto holds for it.

Each concurrent invocation gets its own warm instance, built by the handler module's
`create_handler` from the function's template environment, as a Lambda execution environment
is initialised once and reused. A configuration change (an operator's update-function-
configuration against the moto server) retires the warm instances, like a new deployment.
A handler that outlives its timeout is reported as timed out; its thread cannot be frozen as
Lambda would freeze it, so it is abandoned and may finish late (visibility expiry mid-task).

Lambda would start a new execution environment for every invocation that finds none idle, up to
the function's concurrency. Here every environment shares one interpreter, so more of them add no
throughput, only contention: under a burst each new one's cold start (about 70 ms of CPU) pushed
warm invocations past their timeouts, whose environments were then retired, so more cold starts
followed. A function therefore runs at most `MAX_INSTANCES` invocations at once and the rest wait
for an instance, their wait counted in their duration as the caller sees it but not in their
timeout (Lambda's clock starts when the handler does). The event source mappings never ask for
more than MaximumConcurrency anyway; the API's route throttles are what bound the rest.
"""

from __future__ import annotations

import contextlib
import importlib
import threading
import time
import traceback
import uuid
from collections import deque
from collections.abc import Callable, Mapping
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

from local_aws.capture import OutputCapture
from local_aws.deploy import REGION
from local_aws.iam.enforcer import ENFORCER
from local_aws.metrics import MetricsStore

Handler = Callable[[Any, Any], Any]
MAX_INSTANCES = 8
"""Concurrent invocations of one function in this process (see above)."""

_INITIALISING = threading.Lock()
"""One instance initialises at a time in this process. Lambda initialises each execution
environment in a process of its own; here an instance's set-up shares the interpreter's
module-level state with every other, and some of that state is not safe to build from two
threads at once: two Powertools `Logger`s for one service, made together, left one without its
formatter, and that cold start crashed (a 500 from the door under a 120/s burst)."""


def _handler_module(config: FunctionConfig) -> ModuleType:
    """Imported when a host is made, on the thread starting the runtime, not at a cold start.
    CPython's import locks can fail two threads importing one package's modules at once when the
    package's `__init__` imports the module the other thread asked for (gh-83065): a driver reading
    `pipeline.tasks.messages` while a consumer's cold start imported `pipeline.tasks` got a KeyError
    (`make demo`), and the cold start could fail the same way. Loaded up front, no thread imports
    the pipeline's code while another runs it."""
    return importlib.import_module(config.handler.rpartition(".")[0])


@dataclass(frozen=True)
class FunctionConfig:
    name: str
    arn: str
    handler: str
    environment: Mapping[str, str]
    timeout_seconds: float
    memory_mb: int
    role: str = ""
    """The execution role's ARN; its session's credentials are the instance's (local_aws/iam/)."""

    @classmethod
    def from_moto(cls, configuration: Mapping[str, Any]) -> FunctionConfig:
        return cls(
            name=configuration["FunctionName"],
            arn=configuration["FunctionArn"],
            handler=configuration["Handler"],
            environment=dict((configuration.get("Environment") or {}).get("Variables", {})),
            timeout_seconds=float(configuration.get("Timeout", 3)),
            memory_mb=int(configuration.get("MemorySize", 128)),
            role=str(configuration.get("Role", "")),
        )


class LambdaContext:
    def __init__(self, config: FunctionConfig, deadline: float) -> None:
        self.function_name = config.name
        self.function_version = "$LATEST"
        self.invoked_function_arn = config.arn
        self.memory_limit_in_mb = config.memory_mb
        self.aws_request_id = str(uuid.uuid4())
        self.log_group_name = f"/aws/lambda/{config.name}"
        self.log_stream_name = f"local/{self.aws_request_id[:8]}"
        self._deadline = deadline

    def get_remaining_time_in_millis(self) -> int:
        return max(0, int((self._deadline - time.monotonic()) * 1000))


@dataclass
class Invocation:
    result: Any = None
    error: str | None = None
    duration_ms: float = 0.0
    cold_start: bool = False

    @property
    def ok(self) -> bool:
        return self.error is None


@dataclass
class _Instance:
    handler: Handler
    config: FunctionConfig


@dataclass
class FunctionStats:
    invocations: int = 0
    errors: int = 0
    timeouts: int = 0
    cold_starts: int = 0
    in_flight: int = 0
    peak_in_flight: int = 0
    durations_ms: deque[float] = field(default_factory=lambda: deque(maxlen=10_000))
    """The most recent ones: enough for the summary's percentiles, bounded for a long soak."""


class FunctionHost:
    def __init__(self, config: FunctionConfig, *, capture: OutputCapture, metrics: MetricsStore) -> None:
        _handler_module(config)
        self._config = config
        self._capture = capture
        self._metrics = metrics
        self._idle: list[_Instance] = []
        self._lock = threading.Lock()
        self._slots = threading.BoundedSemaphore(MAX_INSTANCES)
        self.stats = FunctionStats()

    @property
    def config(self) -> FunctionConfig:
        return self._config

    def reconfigure(self, config: FunctionConfig) -> bool:
        """Adopt a changed configuration; warm instances are retired. True when it changed."""
        if config.handler != self._config.handler:
            with contextlib.suppress(Exception):  # a handler that cannot load fails its invocations, as on Lambda
                _handler_module(config)
        with self._lock:
            if config == self._config:
                return False
            self._config = config
            self._idle.clear()
            return True

    def invoke(self, event: Any) -> Invocation:
        started = time.monotonic()
        with self._slots:
            return self._invoke(event, started)

    def _invoke(self, event: Any, started: float) -> Invocation:
        config = self._config
        deadline = time.monotonic() + config.timeout_seconds
        with self._lock:
            instance = self._idle.pop() if self._idle else None
            self.stats.invocations += 1
            self.stats.in_flight += 1
            self.stats.peak_in_flight = max(self.stats.peak_in_flight, self.stats.in_flight)
        self._metric("ConcurrentExecutions", self.stats.in_flight, "Count")
        future: Future[Invocation] = Future()
        # A daemon thread, not an executor's: a handler stuck past its timeout must not keep the
        # process from exiting (executor threads are joined at interpreter exit).
        threading.Thread(
            target=self._run_into,
            args=(future, instance, config, event, deadline),
            daemon=True,
            name=f"fn-{config.name[-24:]}",
        ).start()
        try:
            outcome = future.result(timeout=max(0.0, deadline - time.monotonic()))
        except FutureTimeout:
            outcome = Invocation(error=f"Task timed out after {config.timeout_seconds:.2f} seconds")
            with self._lock:
                self.stats.timeouts += 1
        outcome.duration_ms = (time.monotonic() - started) * 1000
        with self._lock:
            self.stats.in_flight -= 1
            self.stats.durations_ms.append(outcome.duration_ms)
            if not outcome.ok:
                self.stats.errors += 1
        self._metric("Invocations", 1, "Count")
        self._metric("Duration", outcome.duration_ms, "Milliseconds")
        self._metric("Errors", 0 if outcome.ok else 1, "Count")
        self._metric("Throttles", 0, "Count")
        return outcome

    def _run_into(
        self,
        future: Future[Invocation],
        instance: _Instance | None,
        config: FunctionConfig,
        event: Any,
        deadline: float,
    ) -> None:
        try:
            future.set_result(self._run(instance, config, event, deadline))
        except BaseException as exc:  # handed to the waiting caller
            future.set_exception(exc)

    def _run(self, instance: _Instance | None, config: FunctionConfig, event: Any, deadline: float) -> Invocation:
        cold = instance is None
        with self._capture.bound_to(config.name):
            try:
                if instance is None:
                    instance = _Instance(handler=_load(config), config=config)
                    with self._lock:
                        self.stats.cold_starts += 1
                result = instance.handler(event, LambdaContext(config, deadline))
            except Exception as exc:  # a crashed invocation, exactly what Lambda reports
                print(traceback.format_exc().rstrip())
                return Invocation(error=f"{type(exc).__name__}: {exc}", cold_start=cold)
        if time.monotonic() <= deadline:
            with self._lock:
                if instance.config == self._config:
                    self._idle.append(instance)
        return Invocation(result=result, cold_start=cold)

    def _metric(self, name: str, value: float, unit: str) -> None:
        self._metrics.put("AWS/Lambda", name, {"FunctionName": self._config.name}, value, unit)


def _role_credentials(config: FunctionConfig) -> dict[str, str]:
    """A session of the function's execution role, in the variables Lambda gives it, so every call
    the handler makes is judged against its own role. A configuration without a role (a test's
    stand-in function) runs with the process's credentials."""
    if not config.role:
        return {}
    return ENFORCER.assume(config.role, config.name).as_environ()


def _load(config: FunctionConfig) -> Handler:
    """The handler module's `create_handler`, given the function's environment as Lambda would
    set it. Modules read no environment at import, so one import serves every function."""
    module_name, _, attribute = config.handler.rpartition(".")
    module = _handler_module(config)
    factory = getattr(module, "create_handler", None)
    if factory is None:
        raise RuntimeError(f"{module_name} has no create_handler(environ); the local runtime cannot host {attribute}")
    environ = {
        **config.environment,
        "AWS_REGION": REGION,
        "AWS_DEFAULT_REGION": REGION,
        "AWS_LAMBDA_FUNCTION_NAME": config.name,
        "AWS_LAMBDA_FUNCTION_MEMORY_SIZE": str(config.memory_mb),
        "AWS_LAMBDA_FUNCTION_VERSION": "$LATEST",
        **_role_credentials(config),
    }
    with _INITIALISING:
        return factory(environ)
