"""The local runtime's background threads: what AWS does for a deployed stack unasked (queue
metrics and the alarms on them, CloudWatch, TTL deletes, adopting configuration changes), and
keeping the garbage collector's pauses short. Each runs until `stop` is set."""

from __future__ import annotations

import gc
import threading
import time
from collections.abc import Callable, Iterable
from typing import Any

from local_aws import lambda_control
from local_aws.alarms import AlarmEvaluator
from local_aws.deploy import REGION
from local_aws.functions import FunctionConfig, FunctionHost
from local_aws.metrics import MetricsStore, publish_to_cloudwatch, trim_cloudwatch
from local_aws.queue_metrics import QueueSample
from local_aws.queue_metrics import record as record_queue_metrics
from local_aws.ttl_reaper import TtlReaper

SAMPLE_SECONDS = 1.0
PUBLISH_SECONDS = 5.0
TRIM_SECONDS = 60.0
COLLECT_SECONDS = 20.0
CONFIG_REFRESH_SECONDS = 2.0
REAP_SECONDS = 10.0
"""How often expired items are deleted (DynamoDB's TTL takes up to days; memory wants sooner)."""


def sample_queues(
    stop: threading.Event,
    metrics: MetricsStore,
    queue_names: list[str],
    alarms: AlarmEvaluator,
    keep: Callable[[dict[str, QueueSample]], None],
    on_error: Callable[[str], None],
) -> None:
    """SQS's metrics every second and the alarms on them. Nothing slow runs on this thread
    (mirroring to CloudWatch has its own), so an alarm never sees a live queue as missing
    data because a publish was slow."""
    while not stop.wait(SAMPLE_SECONDS):
        try:
            keep(record_queue_metrics(metrics, queue_names))
            alarms.evaluate_all()
        except Exception as exc:
            on_error(f"metrics: {type(exc).__name__}: {exc}")


def collect_garbage(stop: threading.Event) -> None:
    """Keep the cyclic garbage collector's pauses short as the emulated tables grow.

    A full collection walks every object the process holds; the tables' items are most of
    them, so the soak's door p99 had spikes of 1.8 to 2.5 s, a minute apart and growing with
    the data. Every period, what survived a collection is frozen (left out of later ones): a
    collection then walks only what was made since. Frozen objects are still freed as usual
    when nothing refers to them; only a reference cycle among them would outlive the run."""
    while not stop.wait(COLLECT_SECONDS):
        gc.collect()
        gc.freeze()


def publish_metrics(
    stop: threading.Event, metrics: MetricsStore, cloudwatch: Any, on_error: Callable[[str], None]
) -> None:
    last_trim = time.monotonic()
    while not stop.wait(PUBLISH_SECONDS):
        try:
            publish_to_cloudwatch(metrics, cloudwatch)
            if time.monotonic() - last_trim >= TRIM_SECONDS:
                trim_cloudwatch()
                last_trim = time.monotonic()
        except Exception as exc:
            on_error(f"metrics publish: {type(exc).__name__}: {exc}")


def reap_expired(stop: threading.Event, on_error: Callable[[str], None]) -> None:
    from moto.core import DEFAULT_ACCOUNT_ID

    reaper = TtlReaper(DEFAULT_ACCOUNT_ID, REGION)
    while not stop.wait(REAP_SECONDS):
        try:
            reaper.reap()
        except Exception as exc:
            on_error(f"ttl: {type(exc).__name__}: {exc}")


def follow_configuration(
    stop: threading.Event,
    hosts: Iterable[FunctionHost],
    on_event: Callable[[str], None],
    on_error: Callable[[str], None],
) -> None:
    """Adopt configuration changes made through the moto server, as a deploy would."""
    while not stop.wait(CONFIG_REFRESH_SECONDS):
        for host in hosts:
            try:
                configuration = lambda_control.function_configuration(host.config.name)
                if host.reconfigure(FunctionConfig.from_moto(configuration)):
                    on_event(f"{host.config.name}: configuration changed; warm instances retired")
            except Exception as exc:
                on_error(f"config refresh: {type(exc).__name__}: {exc}")
