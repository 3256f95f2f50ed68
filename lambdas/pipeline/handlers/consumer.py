"""The one consumer every lane runs: SQS batch in, ReportBatchItemFailures response out.

The lane (its task, budgets, retry policy and deadlines) comes from the environment the stack
writes (stacks/runtime_env.consumer); the record pipeline is domain/consumer/batch.py.
"""

from __future__ import annotations

import functools
import os
import random
import time
from collections.abc import Callable, Mapping
from typing import Any

from pipeline import settings
from pipeline.adapters.bedrock import ConverseModel, NoModel, converse_client
from pipeline.adapters.call_times import CallTimes
from pipeline.adapters.callback_key import ReplyCallbacks
from pipeline.adapters.clients import Clients
from pipeline.adapters.consumer_observer import ConsumerObserver
from pipeline.adapters.erasure import DynamoEraser
from pipeline.adapters.graph_api import SEND_TIMEOUT_SECONDS, AccessToken, GraphSender
from pipeline.adapters.lane_queue import SqsLaneQueue
from pipeline.adapters.lane_switch import MappingSwitch
from pipeline.adapters.leases import LeaseBudgets
from pipeline.adapters.observability import logger_for, metrics_for
from pipeline.adapters.pause_marks import PauseMarks
from pipeline.adapters.rate_windows import SliceCounters
from pipeline.adapters.sender_key import SenderKey
from pipeline.adapters.state_table import LaneCounts, LaneDrain
from pipeline.adapters.tables import ItemReader, ObligationReader, TableNames
from pipeline.adapters.token_windows import TokenCounters
from pipeline.adapters.transactions import Committer
from pipeline.domain.consumer.batch import Adapters, Consumer, ConsumerConfig
from pipeline.domain.consumer.token_budgeted import TokenBudgeted
from pipeline.domain.consumer.work import MetaSender, TaskFn, Vendor
from pipeline.domain.dependencies import budgets, rates
from pipeline.domain.dependencies.failure_rate import FailureWindow, WatchedModel, WatchedSender
from pipeline.domain.dependencies.token_rates import TokenKeeper
from pipeline.domain.effects import Table
from pipeline.tasks import TASKS, task_for

Handler = Callable[[Mapping[str, Any], Any], dict[str, Any]]


def _table_names(tables: settings.Tables) -> TableNames:
    return TableNames(
        {
            Table.WEBHOOK_LOG: tables.webhook_log,
            Table.JOBS: tables.jobs,
            Table.STATE: tables.state,
            Table.DATA: tables.data,
        }
    )


def _other_queues(environ: Mapping[str, str]) -> dict[str, str]:
    """The other lanes this lane's tasks start work on (the messages lane's auto-reply turns)."""
    return settings.lane_queues(environ) if environ.get(settings.EnvVar.LANE_QUEUES) else {}


def create_handler(
    environ: Mapping[str, str],
    *,
    tasks: Mapping[str, TaskFn] = TASKS,
    clients: Clients | None = None,
    vendor: Vendor | None = None,
    rng: random.Random | None = None,
    clock: Callable[[], float] = time.time,
    send_timeout_seconds: float = SEND_TIMEOUT_SECONDS,
) -> Handler:
    """Build one consumer instance. The keyword arguments are seams for tests (a seeded RNG, a
    stand-in model or clock, clients with event hooks, a shorter wait for Meta's answer); Lambda and
    the local runtime pass none,
    so the lane's model is Bedrock's Converse API (the local runtime's fake of it is moto's)."""
    config = settings.ConsumerSettings.from_environ(environ)
    lane = config.lane
    task = task_for(lane.task, tasks)
    rng = rng or random.Random()  # noqa: S311 (jitter, not secrets)
    keys = settings.credentials(environ)
    clients = clients or Clients(region=config.region, credentials=keys)
    if vendor is None:
        model = config.model
        vendor = (
            ConverseModel(converse_client(config.region, keys, model), model)
            if model is not None
            else NoModel(lane.name)
        )
        if model is not None and model.tokens_per_minute is not None:
            vendor = TokenBudgeted(
                vendor,
                TokenKeeper(TokenCounters(clients.dynamodb, config.tables.state), clock),
                model_id=model.model_id,
                system_prompt=model.system_prompt,
                max_tokens=model.max_tokens,
                per_minute=model.tokens_per_minute,
            )
    logger = logger_for(environ, f"consumer-{lane.name}")
    metrics = metrics_for(environ, f"consumer-{lane.name}")
    observer = ConsumerObserver(logger, metrics, lane.name)
    names = _table_names(config.tables)
    dynamodb = clients.dynamodb
    calls = CallTimes()
    calls.watch(dynamodb)
    calls.watch(clients.sqs)
    dependency = config.dependency
    committer = Committer(dynamodb, names)
    meta: MetaSender | None = _meta_sender(environ, clients, clock, send_timeout_seconds)
    pausable = config.model is not None or meta is not None
    failures = FailureWindow(lane.pause_on_failures, clock) if pausable and lane.pause_on_failures else None
    if failures is not None:
        vendor = WatchedModel(vendor, failures) if config.model is not None else vendor
        meta = WatchedSender(meta, failures) if meta is not None else None
    consumer = Consumer(
        ConsumerConfig(
            lane=lane,
            dependency=(
                budgets.dependency(lane.dependency, dependency.limit, dependency.mode)
                if dependency and lane.dependency
                else None
            ),
            marker_ttl_seconds=config.idempotency_ttl_seconds,
            effects_retention_seconds=config.retention.effects_seconds,
            send_per_second=config.send_per_second,
            # The sending lane checks its replies against it; the messages lane, where auto-reply
            # is on, finds the tenant owning a delivery's asset in it (tasks/auto_reply.py).
            assets=settings.asset_binding(environ),
            auto_reply=settings.auto_reply_settings(environ),
            model_rate=(
                rates.model_requests(lane.dependency, dependency.requests_per_minute)
                if dependency and lane.dependency and dependency.requests_per_minute
                else None
            ),
        ),
        task,
        Adapters(
            store=ObligationReader(dynamodb, names),
            reader=ItemReader(dynamodb, names),
            budgets=LeaseBudgets(
                dynamodb,
                config.tables.state,
                clock,
                on_release_error=lambda grant, exc: observer.problem(
                    "lease not given back; it expires on its own", exc, budget=grant.budget.key
                ),
            ),
            committer=committer,
            queue=SqsLaneQueue(clients.sqs, config.queue_url, config.dlq_url, others=_other_queues(environ)),
            drain=LaneDrain(LaneCounts(dynamodb, config.tables.state), lane.name),
            observer=observer,
            vendor=vendor,
            calls=calls,
            senders=SenderKey(clients.secretsmanager, settings.require(environ, settings.EnvVar.SENDER_KEY_ARN)),
            # Every lane has one; only the erasure task calls it, and only its lane may (IAM).
            eraser=DynamoEraser(dynamodb, names, committer, config.retention, clock),
            meta=meta,
            callbacks=_callbacks(environ, clients, clock),
            rates=rates.RateKeeper(SliceCounters(dynamodb, config.tables.state), clock),
            switch=_switch(environ, clients, lane.name, PauseMarks(dynamodb, config.tables.state, clock))
            if pausable
            else None,
            failures=failures,
        ),
        clock=clock,
        rng=rng,
    )

    def handle(event: Mapping[str, Any], context: Any) -> dict[str, Any]:
        started = time.monotonic()

        def remaining() -> float:
            if context is not None and hasattr(context, "get_remaining_time_in_millis"):
                return float(context.get_remaining_time_in_millis()) / 1000.0
            return lane.timeout_seconds - (time.monotonic() - started)

        records = event.get("Records") or []
        try:
            failures = consumer.process(records, remaining)
        finally:
            observer.flush()
        return {"batchItemFailures": [{"itemIdentifier": message_id} for message_id in failures]}

    return handle


def _meta_sender(
    environ: Mapping[str, str], clients: Clients, clock: Callable[[], float], timeout_seconds: float
) -> GraphSender | None:
    """Meta's send APIs, on the lanes the stack gave them to (the ai lane); None elsewhere."""
    url, token = environ.get(settings.EnvVar.GRAPH_API_URL), environ.get(settings.EnvVar.ACCESS_TOKEN_ARN)
    if not url or not token:
        return None
    return GraphSender(url, AccessToken(clients.secretsmanager, token, clock), timeout_seconds=timeout_seconds)


def _callbacks(environ: Mapping[str, str], clients: Clients, clock: Callable[[], float]) -> ReplyCallbacks | None:
    arn = environ.get(settings.EnvVar.CALLBACK_KEY_ARN)
    return ReplyCallbacks(clients.secretsmanager, arn, clock) if arn else None


def _switch(environ: Mapping[str, str], clients: Clients, lane: str, marks: PauseMarks) -> MappingSwitch | None:
    """On a lane whose model or Meta token can refuse every record: its own mapping, which Lambda
    names the function by (outside Lambda there is none to pause)."""
    name = environ.get("AWS_LAMBDA_FUNCTION_NAME")
    return MappingSwitch(clients.get("lambda"), name, lane, marks) if name else None


@functools.cache
def _default() -> Handler:
    return create_handler(os.environ)


def handler(event: Mapping[str, Any], context: Any) -> dict[str, Any]:
    return _default()(event, context)
