"""Monthly cost of a lane at AWS list prices (ops/cost/prices.py), from its traffic assumptions.

The services a message touches are priced: SQS, Lambda, DynamoDB (request units and storage),
the HTTP API, CloudWatch Logs and X-Ray; plus the fixed cost of alarms, the dashboard, the
sweeper's schedule and Lambda's idle SQS pollers. What a whole environment costs, with the
optional edge, is ops/cost/environment_cost.py. Not included: custom metrics ($0.30 per metric-month),
data transfer (but the edge's), KMS and Secrets Manager requests, AWS WAF's logs of blocked
requests. The point is the order of magnitude and how it moves with traffic, not a bill.

X-Ray: Lambda's active tracing samples the first request each second and 5% of the rest, and that
rate cannot be configured for a function, so at a steady million webhooks a month nearly every
invocation is traced. Environments that take production traffic pass tracing through instead
(see stacks/config/environments.py); `traced` prices whichever an environment sets.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ops.cost.prices import ASSUMED, LIST_PRICES, Prices, Usage
from pipeline import metric_names
from pipeline.domain.webhook.routing import WEBHOOK_LANES
from stacks.config.lanes import Lane
from stacks.config.privacy import Retention
from stacks.config.storage import INFREQUENT_ACCESS, data_table_class
from stacks.runtime_env import SENDING_TASKS


def entry(lane: Lane) -> str:
    """How work arrives on the lane: a Meta webhook, a job through the API, or a schedule's tick."""
    if lane.tick is not None:
        return "tick"
    return "webhook" if lane.name in WEBHOOK_LANES else "job"


@dataclass(frozen=True)
class UnitsPerMessage:
    sqs_requests: float
    writes: float
    reads: float
    api_requests: float
    data_writes: float = 0.0
    """The part of `writes` that lands in the data table (the effect and its index entry), priced
    at that table's class."""


HOLD_READS = 2
"""Read units an AI turn spends on whether it may answer: the tenant's switch and the conversation's
hold. Priced per message, as the lane's turns are (an upper bound: a burst is one turn)."""


AUTO_REPLY_WRITES = 9
"""Write units a message the messages lane starts an auto-reply turn for adds (tasks/auto_reply.py):
its commit is a transaction of five items of under 1 KB (its row, the message, the turn marker, the
message kept for the prompt, the unanswered entry: 2 units each) where a message nobody answers is
one keyed put (1 unit). Counted from the calls the lane makes (tests/unit/tasks/test_auto_reply.py)."""
AUTO_REPLY_READS = 1
"""A consistent read of the message kept for the prompt: a message stamped before is not stamped again."""
AUTO_REPLY_SQS = 1
"""The turn's SendMessage to the ai lane (its receive and delete are the ai lane's)."""


def auto_reply_per_million(prices: Prices = LIST_PRICES) -> float:
    """What auto-reply adds on the messages lane, per million messages it starts a turn for."""
    return (
        AUTO_REPLY_WRITES * prices.dynamodb_per_million_writes
        + AUTO_REPLY_READS * prices.dynamodb_per_million_reads
        + AUTO_REPLY_SQS * prices.sqs_per_million_requests
    )


def units(lane: Lane, usage: Usage = ASSUMED) -> UnitsPerMessage:
    """Requests and capacity units per message, counted from the code's write path (the cost
    scenario in bench/scenarios measures the same items)."""
    kind = entry(lane)
    # The send (one request per 64 KiB), then one receive and one delete per batch.
    sqs = math.ceil(lane.traffic.payload_kib / LIST_PRICES.sqs_request_kib) + 2 / lane.policy.batch_size
    budgets = (2 if lane.policy.tenant_quota else 0) + (2 if lane.policy.dependency else 0)  # each: take and give back
    # A reply sent counts against its number's rate: one write unit (domain/dependencies/rates.py), at most
    # one send per message (a turn answers every message since the last reply).
    budgets += 1 if lane.policy.task in SENDING_TASKS else 0
    # Before the model is asked, a turn reads the tenant's off switch and the conversation's hold
    # (tasks/reply_holds.py held): two consistent reads of small items, a read unit each.
    holds = HOLD_READS if lane.policy.task in SENDING_TASKS else 0
    # And claims the turn on the conversation's marker, so that one copy of it calls the model
    # (tasks/turn_claims.py): one write unit.
    budgets += 1 if lane.policy.task in SENDING_TASKS else 0
    drain = 1 / lane.policy.batch_size  # one drain-count update per batch, for admission
    effect = math.ceil(effect_kib(lane, usage))
    if kind == "tick":
        # No row: an idempotency marker and the task's write, in one transaction (2 units each).
        return UnitsPerMessage(sqs, writes=2 * 2 + budgets + drain, reads=0.0, api_requests=0.0, data_writes=2)
    if kind == "webhook":
        # No index entry: what the task stores about a person is in their partition of the data
        # table, and the week of raw rows is scanned by an erasure (adapters/erasure.py) and by
        # `lanectl trace` given Meta's id (ops/commands/meta_id_search.py).
        row = math.ceil(lane.traffic.payload_kib * usage.body_compression + usage.row_overhead_kib)
        # Without a call out, the task's keyed writes are its done-mark (domain/marks.effect_is_mark);
        # work that calls out keeps one: the row and the effect, in one transaction.
        data = effect if lane.policy.dependency is None else 2 * effect
        finish = data if lane.policy.dependency is None else 2 * row + data
        reads = math.ceil(row / 4)
        return UnitsPerMessage(
            sqs, writes=row + finish + budgets + drain, reads=reads + holds, api_requests=1.0, data_writes=data
        )
    # A job about a person: its row's entry in the jobs table's by_sender index, and the entry of
    # the item its task stores (keys only: a unit each).
    index = 1 if lane.personal else 0
    row = math.ceil(lane.traffic.payload_kib + usage.row_overhead_kib)
    door = 2 * (row + 1) + index  # row and tenant counter in one transaction, plus the index entry
    finish = 2 * (row + effect + 1) + 1  # done-mark, task write, counter; pending-index removal
    reads = math.ceil(row / 4)  # one consistent read of the row per 4 KiB
    return UnitsPerMessage(
        sqs,
        writes=door + finish + budgets + drain + index,
        reads=reads + holds,
        api_requests=1.0,
        data_writes=2 * effect + index,
    )


def effect_kib(lane: Lane, usage: Usage = ASSUMED) -> float:
    """What a message's task stores: a webhook's item with its text deflated (domain/stored_text.py)
    and its keys; a job's about its payload's size."""
    if entry(lane) == "webhook":
        return lane.traffic.payload_kib * usage.stored_item_ratio + usage.item_keys_kib
    return lane.traffic.payload_kib


def row_kib(lane: Lane, usage: Usage = ASSUMED) -> float:
    """What a message's row (or a tick's marker) holds, in KiB."""
    if entry(lane) == "webhook":
        return lane.traffic.payload_kib * usage.body_compression + usage.row_overhead_kib
    if entry(lane) == "job":
        return lane.traffic.payload_kib + usage.row_overhead_kib
    return 0.1  # the idempotency marker


def stored_kib(lane: Lane, usage: Usage = ASSUMED) -> float:
    """What one message leaves in DynamoDB while it is kept: its row and its effect."""
    return row_kib(lane, usage) + effect_kib(lane, usage)


def stored_kib_days(lane: Lane, retention: Retention, usage: Usage = ASSUMED) -> tuple[float, float]:
    """KiB-days one message occupies under an environment's retention: (its row, for the raw
    deliveries' or the jobs' period; its effect, in the data table for the effects' period)."""
    kind = entry(lane)
    row_days = {"webhook": retention.raw_deliveries_days, "job": retention.jobs_days}.get(kind, retention.effects_days)
    return row_kib(lane, usage) * row_days, effect_kib(lane, usage) * retention.effects_days


def traced(requests_per_second: float) -> float:
    """Traces a second that Lambda's fixed sampling records for a function called at this rate."""
    return min(requests_per_second, 1.0) + 0.05 * max(0.0, requests_per_second - 1.0)


@dataclass(frozen=True)
class Cost:
    messages: float
    sqs: float
    lambda_: float
    dynamodb: float
    api: float
    logs: float
    xray: float = 0.0

    @property
    def total(self) -> float:
        return self.sqs + self.lambda_ + self.dynamodb + self.api + self.logs + self.xray


@dataclass(frozen=True)
class Counts:
    """The billable work of one lane over some period, modelled (`lane_cost`) or measured (the cost
    scenario in bench/scenarios)."""

    messages: float
    consumer_invocations: float
    door_invocations: float
    sqs_requests: float
    write_units: float
    read_units: float
    api_requests: float
    log_bytes: float | None = None
    """Measured log bytes; None prices the usage assumption per message."""
    traces: float = 0.0
    stored_kib: float = 0.0
    """Item bytes left in DynamoDB, priced for `usage.retention_days` (and their backup window)."""
    stored_kib_days: float | None = None
    """Item bytes times the days each is kept, where the periods are known (`stored_kib_days`);
    when given, `stored_kib` is not used."""
    infrequent_write_units: float = 0.0
    """Write units, read units and KiB-days in tables of the Standard-IA class; the fields above
    are the Standard class's."""
    infrequent_read_units: float = 0.0
    infrequent_stored_kib_days: float = 0.0
    log_kept_days: float = 0.0
    """How long the log bytes are kept (the log groups' retention): their storage is priced too."""


def itemised(counts: Counts, lane: Lane, prices: Prices = LIST_PRICES, usage: Usage = ASSUMED) -> dict[str, float]:
    """Dollars by line item. Lambda compute is priced from the usage assumptions: the lane's service
    time per message plus an overhead per invocation, and the door's time per request."""
    consumer_gb_s = (
        (
            counts.messages * lane.policy.service_seconds
            + counts.consumer_invocations * usage.invocation_overhead_seconds
        )
        * lane.memory_mb
        / 1024
    )
    door_gb_s = counts.door_invocations * usage.door_seconds * usage.door_memory(entry(lane)) / 1024
    million = 1_000_000
    return {
        "API Gateway": counts.api_requests / million * prices.http_api_per_million_requests,
        "Lambda requests": (counts.consumer_invocations + counts.door_invocations)
        / million
        * prices.lambda_per_million_requests,
        "Lambda compute": (consumer_gb_s + door_gb_s) * prices.lambda_per_gb_second,
        "SQS": counts.sqs_requests / million * prices.sqs_per_million_requests,
        "DynamoDB writes": (
            counts.write_units * prices.dynamodb_per_million_writes
            + counts.infrequent_write_units * prices.dynamodb_ia_per_million_writes
        )
        / million,
        "DynamoDB reads": (
            counts.read_units * prices.dynamodb_per_million_reads
            + counts.infrequent_read_units * prices.dynamodb_ia_per_million_reads
        )
        / million,
        "CloudWatch Logs": _log_gb(counts, usage)
        * (prices.logs_per_gb + counts.log_kept_days / 30 * prices.logs_storage_per_gb_month),
        "X-Ray traces": counts.traces / million * prices.xray_per_million_traces,
        # Point-in-time recovery is billed on the table's size, whatever its class.
        "DynamoDB storage": (
            _kib_days(counts, usage) * (prices.dynamodb_storage_per_gb_month + prices.pitr_per_gb_month)
            + counts.infrequent_stored_kib_days * (prices.dynamodb_ia_storage_per_gb_month + prices.pitr_per_gb_month)
        )
        / (1024 * 1024)
        / 30,
    }


def _kib_days(counts: Counts, usage: Usage) -> float:
    if counts.stored_kib_days is not None:
        return counts.stored_kib_days
    return counts.stored_kib * usage.retention_days


def _log_gb(counts: Counts, usage: Usage) -> float:
    if counts.log_bytes is not None:
        return counts.log_bytes / 1024**3
    platform = (counts.consumer_invocations + counts.door_invocations) * usage.platform_log_bytes_per_invocation
    return (counts.messages * usage.log_kib_per_message * 1024 + platform) / 1024**3


def lane_cost(
    lane: Lane,
    average_fraction: float,
    prices: Prices = LIST_PRICES,
    usage: Usage = ASSUMED,
    *,
    tracing_active: bool = False,
    retention: Retention | None = None,
    log_kept_days: float = 0.0,
    through_api: bool = True,
) -> Cost:
    """`retention`: the environment's periods for storage (and so the data table's class); without
    it, `usage.retention_days` at the Standard class. `log_kept_days`: the log groups' retention.
    `through_api`: False where the lane's messages come in by a function URL (no request charge)."""
    rate = lane.traffic.peak_per_second * average_fraction
    messages = rate * prices.seconds_per_month
    per = units(lane, usage)
    kind = entry(lane)
    door_rate = rate if kind != "tick" else 0.0
    traces = (
        (traced(door_rate) + traced(rate / lane.policy.batch_size)) * prices.seconds_per_month
        if tracing_active
        else 0.0
    )
    infrequent = retention is not None and data_table_class(retention) == INFREQUENT_ACCESS
    data_writes = messages * per.data_writes if infrequent else 0.0
    rows_kept, effects_kept = stored_kib_days(lane, retention, usage) if retention is not None else (0.0, 0.0)
    counts = Counts(
        messages=messages,
        consumer_invocations=messages / lane.policy.batch_size,  # full batches: optimistic at low traffic
        door_invocations=messages if kind != "tick" else 0.0,
        sqs_requests=messages * per.sqs_requests,
        write_units=messages * per.writes - data_writes,
        read_units=messages * per.reads,
        api_requests=messages * per.api_requests if through_api else 0.0,
        traces=traces,
        stored_kib=messages * stored_kib(lane, usage),
        stored_kib_days=None
        if retention is None
        else messages * (rows_kept if infrequent else rows_kept + effects_kept),
        infrequent_write_units=data_writes,
        infrequent_stored_kib_days=messages * effects_kept if infrequent else 0.0,
        log_kept_days=log_kept_days,
    )
    items = itemised(counts, lane, prices, usage)
    return Cost(
        messages=messages,
        sqs=items["SQS"],
        lambda_=items["Lambda compute"] + items["Lambda requests"],
        dynamodb=items["DynamoDB writes"] + items["DynamoDB reads"] + items["DynamoDB storage"],
        api=items["API Gateway"],
        logs=items["CloudWatch Logs"],
        xray=items["X-Ray traces"],
    )


DOOR_FUNCTIONS = 3
"""The webhook door, the jobs API and the data-deletion callback."""
DOOR_ROUTES = 5
"""POST /webhooks/meta, POST /jobs, GET /jobs/{id}, POST /meta/data-deletion and its GET status page."""
ROUTE_METRICS = 6
"""What API Gateway writes per route with detailed metrics on: 4xx, 5xx, Count, Latency,
IntegrationLatency, DataProcessed."""

PROBE_RUN_SECONDS = 0.2
"""A lane probe run with nothing paused: one BatchGetItem, and its log line."""


@dataclass(frozen=True)
class FixedCost:
    idle_polling: float
    sweeper: float
    alarms: float
    dashboard: float
    alarm_count: int
    lane_probe: float = 0.0
    """The lane probe's runs: its invocations and its read of the pause marks (Bedrock's and Meta's
    calls only while a lane is paused, too few to price)."""
    route_metrics: float = 0.0
    """API Gateway's detailed metrics on each throttled route (which the routes' 5xx alarms read),
    each priced as a custom metric."""

    @property
    def total(self) -> float:
        return self.idle_polling + self.sweeper + self.lane_probe + self.alarms + self.dashboard + self.route_metrics


def fixed_cost(
    lane_count: int,
    sweeper_period_seconds: float,
    prices: Prices = LIST_PRICES,
    usage: Usage = ASSUMED,
    *,
    undelivered_pages_alarm: bool = False,
    quiet_webhooks_alarm: bool = False,
    quiet_accounts_alarm: bool = False,
    sending_lanes: int = 0,
    status_lanes: int = 0,
    pause_alarms: int = 0,
    probe_period_seconds: float | None = None,
    probed_lanes: int = 0,
    door_routes: int = DOOR_ROUTES,
) -> FixedCost:
    polls = lane_count * usage.idle_pollers * prices.seconds_per_month / 20
    sweeps = prices.seconds_per_month / sweeper_period_seconds
    # Per lane: age, quiet tenants' age, dead letters, consumer errors, throttles, out of time, jobs
    # shed, pending jobs' age. Per lane the door routes to: pending deliveries' age. Global:
    # unprocessed webhook age, a sweeper silent on either source, abandoned and expired webhooks and
    # jobs, refused signatures, unparseable deliveries, and each 5xx reason of the doors (webhook,
    # jobs API, data-deletion callback); where SNS mails or posts pages itself, the pages it could
    # not deliver; where the environment expects steady traffic, webhooks gone quiet; where it
    # watches source accounts, the quiet accounts (one series, whatever their number); per lane that
    # sends replies through Meta, its unanswered replies; per lane that applies WhatsApp's statuses,
    # the replies Meta reported failed; per lane that pauses itself, one per reason, and its probe
    # failing for long; the probe's own errors. Per HTTP door's function (webhook, jobs API,
    # data-deletion callback): Lambda's errors, throttles and a run near its timeout; per route they
    # serve, API Gateway's 5xx.
    doors = (
        len(metric_names.WebhookFailure.ALL) + len(metric_names.JobFailure.ALL) + len(metric_names.ErasureFailure.ALL)
    )
    alarm_count = (
        8 * lane_count
        + len(WEBHOOK_LANES)
        + 9
        + doors
        + DOOR_FUNCTIONS * 3
        + DOOR_ROUTES
        + int(undelivered_pages_alarm)
        + int(quiet_webhooks_alarm)
        + int(quiet_accounts_alarm)
        + sending_lanes
        + status_lanes
        + pause_alarms
        + (probed_lanes + 1 if probed_lanes else 0)
    )
    # A probe run with no lane paused: one eventually consistent BatchGetItem of the pause marks
    # (0.5 read units a lane, found or not), about 0.2 s at 256 MB.
    probe_runs = prices.seconds_per_month / probe_period_seconds if probe_period_seconds and probed_lanes else 0.0
    lane_probe = probe_runs * (
        0.25 * PROBE_RUN_SECONDS * prices.lambda_per_gb_second
        + prices.lambda_per_million_requests / 1_000_000
        + probed_lanes * 0.5 * prices.dynamodb_per_million_reads / 1_000_000
    )
    return FixedCost(
        idle_polling=polls / 1_000_000 * prices.sqs_per_million_requests,
        sweeper=sweeps * (1.0 * 0.5 * prices.lambda_per_gb_second + prices.lambda_per_million_requests / 1_000_000),
        alarms=alarm_count * prices.alarm_per_month,
        dashboard=prices.dashboard_per_month,
        alarm_count=alarm_count,
        lane_probe=lane_probe,
        route_metrics=door_routes * ROUTE_METRICS * prices.metric_per_month,
    )
