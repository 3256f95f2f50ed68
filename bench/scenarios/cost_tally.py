"""Scenario 10's accounting: one design's requests, units, log bytes and storage for a run, priced
per million webhooks, and the floor: the least the same guarantees could cost, priced the same way.

Write units, read units and storage are kept by table (bench/scenarios/metering.py), so each is
priced at its table's class: a design names the tables it keeps in the Standard-IA class."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from bench.mapping_player import BATCH
from bench.scenarios.metering import Usage
from stacks.config.doors import WebhookDoorKind
from stacks.config.lanes import catalogue

LANE = "messages"
DOOR, CONSUMER, ESM = "door", "consumer", "event source mapping"


@dataclass
class Tally:
    """Per-design totals for `webhooks` deliveries."""

    webhooks: int
    api_requests: int
    door_invocations: int
    consumer_invocations: int
    records: int
    usage: dict[str, Usage]
    log_bytes: float = 0.0
    """Function log lines written (Lambda's own per-invocation lines are added when priced)."""
    infrequent_tables: frozenset[str] = frozenset()
    """Tables of the Standard-IA class; every other table is Standard."""
    log_kept_days: float = 0.0
    """The log groups' retention: how long the log bytes are stored."""

    def requests(self, service: str, operations: frozenset[str] | None = None, groups: tuple[str, ...] = ()) -> int:
        return sum(u.count(service, operations) for g, u in self.usage.items() if not groups or g in groups)

    @property
    def sqs(self) -> int:
        return sum(
            n for u in self.usage.values() for (s, op), n in u.requests.items() if s == "sqs" and "(empty)" not in op
        )

    @property
    def wcu(self) -> float:
        return sum(u.wcu + u.index_wcu for u in self.usage.values())

    @property
    def rcu(self) -> float:
        return sum(u.rcu for u in self.usage.values())

    def split(self, by_table: str) -> tuple[float, float]:
        """(Standard, Standard-IA) sums of a per-table counter of every group."""
        standard = infrequent = 0.0
        for usage in self.usage.values():
            for table, value in getattr(usage, by_table).items():
                if table in self.infrequent_tables:
                    infrequent += value
                else:
                    standard += value
        return standard, infrequent

    @property
    def kib_days(self) -> float:
        return sum(self.split("kib_days_by_table"))

    def per(self, value: float) -> float:
        return value / self.webhooks

    def cost_per_million(self) -> dict[str, float]:
        from ops.cost.prices import ASSUMED
        from ops.cost.pricing import Counts, itemised

        lane = next(lane for lane in catalogue() if lane.name == LANE)
        platform = (self.door_invocations + self.consumer_invocations) * ASSUMED.platform_log_bytes_per_invocation
        writes, ia_writes = self.split("wcu_by_table")
        reads, ia_reads = self.split("rcu_by_table")
        kept, ia_kept = self.split("kib_days_by_table")
        counts = Counts(
            messages=self.records,
            consumer_invocations=self.consumer_invocations,
            door_invocations=self.door_invocations,
            sqs_requests=self.sqs,
            write_units=writes,
            read_units=reads,
            api_requests=self.api_requests,
            log_bytes=self.log_bytes + platform,
            stored_kib_days=kept,
            infrequent_write_units=ia_writes,
            infrequent_read_units=ia_reads,
            infrequent_stored_kib_days=ia_kept,
            log_kept_days=self.log_kept_days,
        )
        scale = 1_000_000 / self.webhooks
        return {item: dollars * scale for item, dollars in itemised(counts, lane).items()}


ACCOUNT_NOTES = "UpdateItem state"
"""The door's note of a source account (adapters/accounts_seen.py; its item's key has no `#`)."""


def amortise(usage: Usage, kind: str, table: str, fraction: float) -> float:
    """Charge only `fraction` of `usage`'s write units of item kind `kind`, made in `table`: for a
    write that stands for more time than the run (a note good for an hour); the units taken off."""
    off = usage.wcu_by_item.get(kind, 0) * (1.0 - fraction)
    usage.wcu -= off
    usage.wcu_by_item[kind] -= off
    usage.wcu_by_table[table] -= off
    return off


FLOOR_ROW_UNITS = 1.1
"""The least for the same guarantees, counted by hand for one 2 KB text, outside the data table: its
row before the enqueue, compressed under 1 KB (1 unit; nothing accepted is lost, and identical
redeliveries are refused by its key), and a tenth of a drain count a batch (admission's rate)."""
FLOOR_EFFECT_UNITS = 1.0
"""In the data table: the stored message as its own done-mark (each effect once), under 1 KB with
its text deflated, in its sender's partition so an erasure finds it without an index entry."""
FLOOR_LOG_BYTES = 300
"""One outcome line per record (tenant, outcome: what the dashboards read)."""


def floor_cost(ours: Tally) -> dict[str, float]:
    """The floor priced like the designs: the same Lambda assumptions and batch fill as this run,
    one send plus a receive and a delete per batch, one consistent read of the row, the storage
    this run measured (a row under 1 KB for its week, the effect for its quarter, at their tables'
    classes: nothing less keeps them as long). Not per webhook, so not in it: an erasure's scan of
    the raw log (`lanectl plan` prices one)."""
    from ops.cost.prices import ASSUMED
    from ops.cost.pricing import Counts, itemised

    lane = next(lane for lane in catalogue() if lane.name == LANE)
    n = ours.webhooks
    batches = ours.consumer_invocations or n / BATCH
    effect_infrequent = bool(ours.infrequent_tables)
    kept, ia_kept = ours.split("kib_days_by_table")
    counts = Counts(
        messages=n,
        consumer_invocations=batches,
        door_invocations=n,
        sqs_requests=n + 2 * batches,
        write_units=(FLOOR_ROW_UNITS + (0.0 if effect_infrequent else FLOOR_EFFECT_UNITS)) * n,
        infrequent_write_units=FLOOR_EFFECT_UNITS * n if effect_infrequent else 0.0,
        read_units=n,
        api_requests=n,
        log_bytes=n * FLOOR_LOG_BYTES + (n + batches) * ASSUMED.platform_log_bytes_per_invocation,
        stored_kib_days=kept,
        infrequent_stored_kib_days=ia_kept,
        log_kept_days=ours.log_kept_days,
    )
    return {item: dollars * 1_000_000 / n for item, dollars in itemised(counts, lane).items()}


API_ITEM = "API Gateway"
"""The HTTP API's request charge among the priced items (ops/cost/pricing.py `itemised`)."""


def by_door(costs: Mapping[str, float]) -> dict[WebhookDoorKind, float]:
    """A design's total per million webhooks with each webhook door (stacks/config/doors.py): the
    HTTP API's route pays its request charge; a function URL pays none, and everything else the
    same (the same invocation, the same log lines, the same AWS calls)."""
    total = sum(costs.values())
    return {WebhookDoorKind.HTTP_API: total, WebhookDoorKind.FUNCTION_URL: total - costs[API_ITEM]}


def per_batch(t: Tally) -> str:
    return f"{t.records / t.consumer_invocations:.1f}" if t.consumer_invocations else "n/a"
