"""What finding a window of deliveries costs, and what replaying one costs (ops/log_selection.py,
ops/commands/replay.py); `lanectl plan` prints the first, `lanectl replay --dry-run` the second.

A listing is an eventually consistent Scan of the webhook log (kept `raw_deliveries_days`) and of
the jobs table (kept `jobs_days`): half a read unit per 4 KiB of table, whatever the filter keeps.
The alternative, an index keyed by tenant and time, would hold an entry for every row: about one
write unit per delivery and per job when it is written, every month, plus the entries' storage.

A replayed delivery writes what its first run wrote, less the door's row: on a lane that calls no
model its keyed writes are its done-mark (one unit per KiB of item, each a replace; no index entry
changes, as neither its key nor the projected `delivery` does); on one that does, the effect and
the row's done-mark in one transaction (two units per KiB each) plus the budget's lease; a job,
its done-mark and effect in one transaction (its tenant's queued count is not touched: the row is
no longer queued). Plus one consistent read of the row, and the SQS requests (one send in a batch
of ten, its receive and delete in the consumer's batch).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ops.cost.prices import ASSUMED, LIST_PRICES, Prices, Usage
from ops.cost.pricing import effect_kib, entry, row_kib
from stacks.config.environments import Environment
from stacks.config.lanes import Lane

INDEX_ENTRY_KIB = 0.1
"""An entry of a (tenant, time) index: the table's key, the tenant and the time."""


@dataclass(frozen=True)
class ListingCost:
    log_gib: float
    jobs_gib: float
    scan: float
    """Dollars per listing: both tables scanned once."""
    rows_per_month: float
    """Webhook deliveries and jobs written a month: each would pay an index entry."""
    index_per_month: float
    """Dollars a month for a (tenant, time) index on both tables: its writes and its storage."""

    @property
    def break_even(self) -> float:
        """Listings a month at which the index would cost what the scans do."""
        return self.index_per_month / self.scan if self.scan else math.inf


def listing_cost(
    env: Environment, average_fraction: float, prices: Prices = LIST_PRICES, usage: Usage = ASSUMED
) -> ListingCost:
    kib = {"webhook": 0.0, "job": 0.0}
    rows_per_month = 0.0
    kept_rows = 0.0
    for lane in env.lanes:
        kind = entry(lane)
        if kind == "tick":
            continue
        rate = lane.traffic.peak_per_second * average_fraction
        days = env.retention.raw_deliveries_days if kind == "webhook" else env.retention.jobs_days
        kept = rate * days * 86_400
        kib[kind] += kept * row_kib(lane, usage)
        kept_rows += kept
        rows_per_month += rate * prices.seconds_per_month
    read_units = (kib["webhook"] + kib["job"]) / 4 / 2  # eventually consistent: half a unit per 4 KiB
    index_writes = rows_per_month / 1_000_000 * prices.dynamodb_per_million_writes
    index_storage = kept_rows * INDEX_ENTRY_KIB / 1024 / 1024 * prices.dynamodb_storage_per_gb_month
    return ListingCost(
        log_gib=kib["webhook"] / 1024 / 1024,
        jobs_gib=kib["job"] / 1024 / 1024,
        scan=read_units / 1_000_000 * prices.dynamodb_per_million_reads,
        rows_per_month=rows_per_month,
        index_per_month=index_writes + index_storage,
    )


@dataclass(frozen=True)
class ReplayUnits:
    writes: float
    reads: float
    sqs_requests: float

    def dollars(self, prices: Prices = LIST_PRICES) -> float:
        return (
            self.writes / 1_000_000 * prices.dynamodb_per_million_writes
            + self.reads / 1_000_000 * prices.dynamodb_per_million_reads
            + self.sqs_requests / 1_000_000 * prices.sqs_per_million_requests
        )


def replay_units(lane: Lane, usage: Usage = ASSUMED) -> ReplayUnits:
    """Per replayed delivery or job of `lane` (Lambda's time is the lane's, as for a first run)."""
    effect = math.ceil(effect_kib(lane, usage))
    row = math.ceil(row_kib(lane, usage))
    drain = 1 / lane.policy.batch_size
    budgets = (2 if lane.policy.tenant_quota else 0) + (2 if lane.policy.dependency else 0)
    if entry(lane) == "webhook" and lane.policy.dependency is None:
        writes = effect + drain
    else:
        writes = 2 * (row + effect) + budgets + drain
    sqs = 0.1 + 2 / lane.policy.batch_size
    return ReplayUnits(writes=writes, reads=math.ceil(row / 4), sqs_requests=sqs)
