"""10. Cost: every AWS request and write unit of a 1,000-webhook run, priced per million webhooks.

This pipeline: `webhooks` signed WhatsApp message webhooks of about 2 KB (a long text from a
varied vocabulary, not a repeated phrase that would compress to nothing) through the local
runtime's HTTP door,
processed by the messages lane. Every botocore client the runtime creates is metered (see
metering.py): requests by the function whose invocation made them (the door, the consumer), or
by the event source mapping (receives and deletes on the lane's queue); DynamoDB write and read
units measured item by item.

Baseline, the common design as an experienced engineer builds it by default: a Lambda behind the
API that verifies the signature and sends the delivery to SQS (no log row), and a consumer using
Powertools' BatchProcessor and idempotency utility (DynamoDBPersistenceLayer, keyed by the Meta
message id) around an idempotent put of the message, and nothing else. It runs in the same
emulator over the same deliveries, in batches as full as this pipeline's were in the same run,
and is metered the same way.

Webhook door: this pipeline is priced with each (stacks/config/doors.py): the HTTP API's route
it runs through here, and a Lambda function URL, the same less API Gateway's request charge.

Prices: ops/cost/prices.py's list prices; Lambda compute from its stated assumptions (door 30 ms at
1 GB, consumer 50 ms a message at 512 MB plus 20 ms an invocation), the same for both designs.
Logs: the bytes this pipeline's door and consumer wrote, measured, plus Lambda's own START, END
and REPORT lines per invocation for both, ingested and kept for production's log retention.
X-Ray: at production's setting (tracing passed through, so no traces; ops/cost/pricing.py says why).
Storage: measured, every item and index entry each write left, until the item's own TTL, at its
table's class in production (the door and the consumer are given production's retention for the
run, and the run checks the items' TTLs). Writes and reads are priced at their table's class too. The
common design keeps its messages as long as this pipeline keeps its effects, and Powertools'
records for their hour.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections import Counter
from dataclasses import dataclass
from typing import Any

from bench.mapping_player import BATCH
from bench.scenarios.cost_common_design import common_design
from bench.scenarios.cost_tally import (
    ACCOUNT_NOTES,
    CONSUMER,
    DOOR,
    ESM,
    LANE,
    Tally,
    amortise,
    by_door,
    floor_cost,
    per_batch,
)
from bench.scenarios.harness import Harness, fan_out
from bench.scenarios.message_text import whatsapp_delivery
from bench.scenarios.metering import WRITES, Meter, Usage, metering_new_clients
from bench.scenarios.result import Result
from ops.drive import Session, poll
from stacks.config.doors import WebhookDoorKind
from stacks.config.environments import get_environment
from stacks.config.lanes import catalogue
from stacks.config.storage import INFREQUENT_ACCESS, data_table_class

PRODUCTION = get_environment("prod")


@dataclass(frozen=True)
class Params:
    webhooks: int = 1000
    producers: int = 4
    tenants: int = 50
    per_second: float = 16.0
    """Paced below what the local messages lane sustains, so the count is of steady-state work, not
    of an overloaded emulator's churn (records returned unstarted, sweeper replays of late rows)."""
    delivery_bytes: int = 2048


FULL = Params()
QUICK = Params(webhooks=60, tenants=10, per_second=20.0)


def _ours(h: Harness, p: Params) -> tuple[Tally, dict[str, Any]]:
    from ops.drive import meta_payloads as meta

    holder: dict[str, Any] = {}

    def group_of(service: str, params: dict[str, Any]) -> str | None:
        session: Session | None = holder.get("session")
        if session is None or service not in ("sqs", "dynamodb"):
            return None
        function = session.runtime.capture.current()
        thread = threading.current_thread().name
        if function == holder["door"]:
            return DOOR
        if function == holder["consumer"] or thread.startswith(f"{LANE}:"):
            return CONSUMER
        if function is None and service == "sqs" and params.get("QueueUrl") == holder["queue"]:
            return ESM
        return None

    import boto3

    meter = Meter(lambda: boto3.session.Session(region_name="us-east-1").client("dynamodb"))
    tag = uuid.uuid4().hex[:6]
    with metering_new_clients(meter, group_of), h.session() as s:
        holder.update(door=s.function_name("ingress"), consumer=s.function_name(LANE), queue=s.queue_url(LANE))
        # Production's consumer timeout (30 s) instead of the local 5 s, whose batches have about three
        # seconds to start records: the ones that do not fit are re-sent, churn production does not have.
        production = next(lane for lane in catalogue() if lane.name == LANE)
        s.set_timeout(LANE, production.policy.timeout_seconds)
        # Production's retention on what the door and the consumer write (the local stack keeps
        # data for days, not production's week and quarter), as an operator would set it: the
        # storage measured is then what production's items occupy until their own TTL.
        # The door also notes each account at production's interval (an hour, not the local 2 s that
        # has it note nearly every delivery): what a delivery costs in prod, not the local clock.
        s.update_environments({"ingress": _production_door, LANE: _production_retention})
        door_before = s.host("ingress").stats.invocations
        door_cold_before = s.host("ingress").stats.cold_starts
        consumer_before = s.host(LANE).stats.invocations
        records_before = s.lane_view(LANE).player.stats.records
        holder["session"] = s
        wabas = [f"waba-cost-{n}-{tag}" for n in range(p.tenants)]
        bodies = [
            whatsapp_delivery(meta, wabas[n % p.tenants], f"wamid.cost.{tag}.{n}", n, p.delivery_bytes)
            for n in range(p.webhooks)
        ]
        capture = s.runtime.capture
        logged_before = {role: capture.bytes_written[holder[role]] for role in ("door", "consumer")}
        started = time.time()

        def deliver(n: int, body: dict[str, Any]) -> int:
            time.sleep(max(0.0, started + n / p.per_second - time.time()))
            return s.client.deliver(body).status

        statuses = fan_out([lambda n=n, b=b: deliver(n, b) for n, b in enumerate(bodies)], p.producers)
        poll(lambda: len(s.log.finished(set(wabas), LANE)) >= p.webhooks and s.lanes_empty(LANE), 120)
        s.settle(10)
        holder.pop("session")
        elapsed = time.time() - started
        # A door instance notes an account once an hour however many of its deliveries arrive: the
        # run's deliveries bear the part of that hour they took, as prod's steady traffic would.
        assert PRODUCTION.accounts is not None
        notes_share = min(1.0, elapsed / PRODUCTION.accounts.silence.note_seconds)
        amortise(meter.group(DOOR), ACCOUNT_NOTES, s.outputs["AccountsTableName"], notes_share)
        stats = s.lane_view(LANE).player.stats
        tally = Tally(
            webhooks=p.webhooks,
            api_requests=len(statuses),
            door_invocations=s.host("ingress").stats.invocations - door_before,
            consumer_invocations=s.host(LANE).stats.invocations - consumer_before,
            records=stats.records - records_before,
            usage=dict(meter.usage),
            log_bytes=sum(capture.bytes_written[holder[role]] - logged_before[role] for role in logged_before),
            log_kept_days=PRODUCTION.log_retention_days,
            infrequent_tables=frozenset(
                {s.outputs["DataTableName"]} if data_table_class(PRODUCTION.retention) == INFREQUENT_ACCESS else ()
            ),
        )
        lines = [r for r in s.log.outcomes(lane=LANE) if r.tenant in set(wabas)]
        logged = {role: capture.bytes_written[holder[role]] - logged_before[role] for role in logged_before}
        outcomes = {
            "logged": logged,
            "door_instances": s.host("ingress").stats.cold_starts - door_cold_before,
            "account_notes": meter.usage.get(DOOR, Usage()).requests[("dynamodb", "UpdateItem")],
            "notes_share": notes_share,
            "accepted": sum(1 for code in statuses if code == 200),
            # Webhooks with a `done` line: a sweeper replay's copy can settle first (as a duplicate,
            # its batch ending earlier), so the first terminal line is not always the done one.
            "done": len({r.id for r in s.log.outcomes(lane=LANE, outcome="done") if r.tenant in set(wabas)}),
            "seconds": elapsed,
            "lines": {o: sum(1 for r in lines if r.outcome == o) for o in sorted({r.outcome for r in lines})},
            "replayed": sum(
                int(line.get("summary", {}).get("webhook", {}).get("replayed", 0))
                for _, line in s.log.lines(lambda _f, parsed: parsed.get("message") == "sweep finished")
            ),
            "kept_days": tuple(
                round(max((u.kept_days_by_item.get(kind, 0.0) for u in meter.usage.values()), default=0.0))
                for kind in ("row", "msg")
            ),
            "reasons": sorted(
                {f"{r.outcome}:{r.reason}:{r.raw.get('error', '')[:120]}" for r in lines if r.outcome != "done"}
            ),
        }
        fill = max(1, round(tally.records / tally.consumer_invocations)) if tally.consumer_invocations else BATCH
        common = common_design(s, bodies, fill, kept_seconds=PRODUCTION.retention.effects_days * 86_400)
        common.log_kept_days = PRODUCTION.log_retention_days
    return tally, {"outcomes": outcomes, "common": common}


def _production_retention(variables: dict[str, str]) -> None:
    from pipeline.settings import EnvVar, RetentionSettings, codec

    variables[EnvVar.RETENTION] = codec.dumps(RetentionSettings(**PRODUCTION.retention.seconds()))


def _production_door(variables: dict[str, str]) -> None:
    from pipeline.settings import EnvVar, codec

    _production_retention(variables)
    assert PRODUCTION.accounts is not None
    variables[EnvVar.ACCOUNT_SILENCE] = codec.dumps(PRODUCTION.accounts.silence)


def run(h: Harness, p: Params = FULL) -> Result:
    result = Result(
        number=10,
        title="Cost",
        question=f"What do {p.webhooks:,} webhooks cost in AWS requests and write units, per million at list prices?",
        baseline="the common design: a Lambda door straight to SQS, and Powertools idempotency around an idempotent "
        "put of the message",
        project_label="this pipeline",
        baseline_label="common design",
    )
    started = time.monotonic()
    ours, extra = _ours(h, p)
    common: Tally = extra["common"]  # type: ignore[assignment]
    outcomes = extra["outcomes"]

    def per(t: Tally, value: float) -> str:
        return f"{t.per(value):.2f}"

    def writes(t: Tally, group: str) -> int:
        return t.usage.get(group, Usage()).count("dynamodb", WRITES)

    def wcu(t: Tally, group: str) -> float:
        usage = t.usage.get(group, Usage())
        return usage.wcu + usage.index_wcu

    result.figure("webhooks accepted / processed", f"{outcomes['accepted']}/{outcomes['done']}", f"{common.webhooks}")
    result.figure("consumer batch size (records per invocation)", per_batch(ours), per_batch(common))
    result.figure(
        "consumer outcomes (records)",
        ", ".join(f"{k} {v}" for k, v in outcomes["lines"].items()),
        f"done {common.records}",
    )
    result.figure(
        "sweeper replays of rows that waited past its patience",
        str(outcomes["replayed"]),
        "n/a (no log, no sweeper)",
        "each a second copy, absorbed as `duplicate`",
    )
    result.figure("SQS requests per webhook (door + poller + consumer)", per(ours, ours.sqs), per(common, common.sqs))
    result.figure(
        "  of which: door / poller / consumer",
        " / ".join(per(ours, ours.requests("sqs", groups=(g,))) for g in (DOOR, ESM, CONSUMER)),
        " / ".join(per(common, common.requests("sqs", groups=(g,))) for g in (DOOR, ESM, CONSUMER)),
    )
    result.figure(
        "DynamoDB write requests per webhook (door / consumer)",
        f"{per(ours, writes(ours, DOOR))} / {per(ours, writes(ours, CONSUMER))}",
        f"{per(common, writes(common, DOOR))} / {per(common, writes(common, CONSUMER))}",
    )
    result.figure(
        "DynamoDB write units per webhook (door / consumer)",
        f"{per(ours, wcu(ours, DOOR))} / {per(ours, wcu(ours, CONSUMER))}",
        f"{per(common, wcu(common, DOOR))} / {per(common, wcu(common, CONSUMER))}",
        "incl. index entries",
    )
    result.figure("DynamoDB write units per webhook", per(ours, ours.wcu), per(common, common.wcu))
    for label, tally, column in (("this pipeline", ours, 0), ("common design", common, 1)):
        items: Counter[str] = Counter()
        for usage in tally.usage.values():
            items.update(usage.wcu_by_item)
        for kind, units in items.most_common():
            cells = [per(tally, units), ""] if column == 0 else ["", per(tally, units)]
            result.figure(f"  write units per webhook, {label}: {kind}", *cells)
    result.figure("DynamoDB read units per webhook", per(ours, ours.rcu), per(common, common.rcu))
    _storage_figures(result, ours, common)
    logged = outcomes["logged"]
    result.figure(
        "function log bytes per webhook: door / consumer (measured)",
        f"{ours.per(logged['door']):.0f} / {ours.per(logged['consumer']):.0f}",
        "0 / 0",
        "plus Lambda's own lines, 330 B an invocation, for both",
    )
    costs = {"ours": ours.cost_per_million(), "common": common.cost_per_million()}
    floor = floor_cost(ours)
    for item in costs["ours"]:
        result.figure(
            f"$ per million webhooks: {item}",
            f"{costs['ours'][item]:.2f}",
            f"{costs['common'][item]:.2f}",
            f"floor {floor[item]:.2f}",
        )
    total = {k: sum(v.values()) for k, v in costs.items()}
    floor_total = sum(floor.values())
    result.figure(
        "$ per million webhooks: total", f"{total['ours']:.2f}", f"{total['common']:.2f}", f"floor {floor_total:.2f}"
    )
    result.figure(
        "cost against the common design / against the floor",
        f"{total['ours'] / total['common']:.2f}x / {total['ours'] / floor_total:.2f}x",
        "1.00x",
        "targets: at most 0.70x and 1.05x",
    )
    doors = _door_figures(result, costs["ours"], total["common"])
    result.check("every webhook was processed", outcomes["done"] == p.webhooks, f"{outcomes['done']}/{p.webhooks}")
    result.check(
        "storage was measured at production's retention",
        outcomes["kept_days"] == (PRODUCTION.retention.raw_deliveries_days, PRODUCTION.retention.effects_days),
        "raw deliveries {} d, effects {} d, read back from the items' TTL".format(*outcomes["kept_days"]),
    )
    notes, instances = outcomes["account_notes"], max(1, outcomes["door_instances"])
    result.check(
        "the door noted each account at production's interval (at most once per account and door instance)",
        notes <= p.tenants * instances,
        f"{notes} notes of {p.tenants} accounts by {instances} door instance(s)",
    )
    result.figure(
        "the door's notes of source accounts in the run (each good for an hour on its instance)",
        str(notes),
        "n/a",
        f"charged for {outcomes['notes_share']:.1%} of their hour, the share the run took",
    )
    result.check(
        "requests and write units were counted for both designs",
        ours.wcu > 0 and common.wcu > 0 and ours.sqs > 0 and common.sqs > 0,
        f"{ours.wcu:.0f} and {common.wcu:.0f} WCU",
    )
    result.headline = (
        f"${total['ours']:.2f} per million webhooks vs ${total['common']:.2f} for the common design; "
        f"{ours.per(ours.wcu):.2f} vs {common.per(common.wcu):.2f} write units and {ours.per(ours.sqs):.2f} vs "
        f"{common.per(common.sqs):.2f} SQS requests per webhook"
    )
    result.data.update(
        ours_wcu=ours.per(ours.wcu),
        common_wcu=common.per(common.wcu),
        total=total,
        done=outcomes["done"],
        account_notes=notes,
        index_entries=ours.per(sum(u.index_wcu for u in ours.usage.values())),
        by_door={kind.value: dollars for kind, dollars in doors.items()},
    )
    result.method = [
        f"{p.webhooks:,} signed WhatsApp message webhooks from {p.tenants} business accounts at {p.per_second:g}/s "
        f"({p.producers} connections), through the runtime's HTTP door ({outcomes['seconds']:.0f} s); messages lane "
        "(batch 10). Metered: every SQS and DynamoDB request of the door, the consumer and the lane's poller.",
        "Common design: the same deliveries through an in-process door (HMAC check, SendMessage) and a Powertools "
        "BatchProcessor consumer with @idempotent_function (its INPROGRESS put and COMPLETED update) around a "
        "conditional put of the message, kept as long as this pipeline keeps its effects, with no status write and "
        "no log lines of its own; metered the same way, at this pipeline's batch fill.",
        "The messages consumer runs with production's 30 s timeout (UpdateFunctionConfiguration): the local "
        "5 s leaves a batch about three seconds to start records, and under this load the rest would be "
        "re-sent, churn production does not have.",
        "Empty polls are left out of the per-webhook figures: Lambda's pollers make them whether or not work "
        "arrives (ops/cost/pricing.py prices them as a fixed monthly cost).",
        "The door notes each source account at production's interval (an hour per account and door instance, "
        "not the local 2 s): every note the run made is counted, and charged for the share of its hour the run "
        "took, since under prod's steady traffic one note covers an hour of its account's deliveries.",
    ]
    result.caveats = [
        "This pipeline's extra writes buy things the common design lacks: the log row written before the "
        "enqueue (scenario 6: nothing lost when the send fails; identical redeliveries refused by its key) and "
        "drain counts for admission. The row is not written again: the stored message is the delivery's "
        "done-mark, in its sender's partition, so an erasure needs no index entry. An erasure scans the week of "
        "raw rows instead: a cost per erasure, not per webhook, so not here (`lanectl plan prod` prices one).",
        "The stored message is one write unit because its text deflates to under half: this vocabulary to about "
        "43%; customers' prose varies (tests/unit/tasks/test_messages.py pins the item under 1 KB for these texts). "
        "Longer texts or less repetitive ones cost a second unit and more storage.",
        "Batches are as full as the local runtime made them (one record at 16/s); fuller batches on AWS lower the "
        "per-webhook poller and invocation costs of both designs alike.",
        "Lambda compute is priced from the stated assumptions, not measured: local durations say nothing about Lambda.",
        "`lanectl trace` by Meta's id costs no write: it scans the raw log when asked "
        "(ops/commands/meta_id_search.py), a cost per trace, not per webhook, so not here.",
        "The function URL door is priced, not run: the local runtime emulates the HTTP API only, and the door's "
        "handler, calls and lines are the same behind either (tests/unit/ingress/test_function_url.py); only API "
        "Gateway's request charge goes. What that door gives up (the route's throttle, access log and 5xx by "
        "route, the edge, mutual TLS) is in docs/ARCHITECTURE.md; prod keeps the route.",
    ]
    if h.plot_dir is not None:
        from bench.scenarios import plots

        items = list(costs["ours"])
        result.plots.append(
            plots.bars(
                h.plot_dir / "s10_cost.png",
                "Cost per million webhooks at list prices, by service",
                ["this pipeline", "common design"],
                {item: [costs["ours"][item], costs["common"][item]] for item in items},
                ylabel="US$ per million webhooks",
                stacked=True,
            )
        )
    result.seconds = time.monotonic() - started
    return result


def _door_figures(result: Result, ours: dict[str, float], common: float) -> dict[WebhookDoorKind, float]:
    doors = by_door(ours)
    route, url = doors[WebhookDoorKind.HTTP_API], doors[WebhookDoorKind.FUNCTION_URL]
    result.figure(
        "$ per million webhooks by this pipeline's webhook door: HTTP API route / function URL",
        f"{route:.2f} / {url:.2f}",
        f"{common:.2f}",
        "the common design behind the HTTP API, as built by default",
    )
    result.figure(
        "cost against the common design by webhook door: HTTP API route / function URL",
        f"{route / common:.2f}x / {url / common:.2f}x",
        "1.00x",
        "target: at most 0.70x",
    )
    return doors


def _storage_figures(result: Result, ours: Tally, common: Tally) -> None:
    result.figure(
        "DynamoDB storage per webhook, KiB-days (until each item's TTL)",
        f"{ours.per(ours.kib_days):.2f}",
        f"{common.per(common.kib_days):.2f}",
        "items and index entries, 100 B overhead each",
    )
    for label, tally, column in (("this pipeline", ours, 0), ("common design", common, 1)):
        kept: Counter[str] = Counter()
        for usage in tally.usage.values():
            kept.update(usage.kib_days_by_item)
        for kind, kib_days in kept.most_common():
            if tally.per(kib_days) >= 0.005:
                cells = [f"{tally.per(kib_days):.2f}", ""] if column == 0 else ["", f"{tally.per(kib_days):.2f}"]
                result.figure(f"  KiB-days per webhook, {label}: {kind}", *cells)
    result.figure(
        "KiB per webhook written without a TTL (not priced)",
        f"{ours.per(sum(sum(u.forever_kib.values()) for u in ours.usage.values())):.3f}",
        f"{common.per(sum(sum(u.forever_kib.values()) for u in common.usage.values())):.3f}",
    )
