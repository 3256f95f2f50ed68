"""What knowing each Meta source account's last delivery costs a month, for the signal built and
for the alternatives it was chosen over, at the environment's planned account count
(stacks/config/account_silence.py). `lanectl plan` prints it.

- **built: notes, one sweep read, one series.** The door writes an account's last-seen item at most
  once per `note_seconds` per instance (lambdas/pipeline/adapters/accounts_seen.py): at most
  accounts x door instances x a month / note_seconds write units, and never more than one per
  delivery. The sweeper reads every item each sweep (one Query a MB: 0.5 read unit per 4 KB) and
  publishes one metric, `QuietAccounts`, with one alarm.
- **a metric and an alarm per account**: no call at the door (EMF lines), but a custom metric and
  an alarm each: accounts x (metric + alarm) a month, and "normally sends" cannot be told from a
  missing datapoint, so every account that merely pauses pages.
- **a write per delivery**: the door's third AWS call on every delivery, deliveries x a write unit.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ops.cost.prices import ASSUMED, LIST_PRICES, Prices, Usage
from ops.cost.pricing import entry
from stacks.config.environments import Environment

ITEM_BYTES_PER_SLOT = 8
"""An `s<n>` attribute holding a slot number."""
ITEM_BASE_BYTES = 80
"""Keys, `last_seen`, `product`, `expires_at`."""


@dataclass(frozen=True)
class AccountSignalCost:
    accounts: int
    door_instances: int
    """Door instances assumed warm, each hearing from every account: the notes' upper bound."""
    note_writes: float
    """Write units a month, at most."""
    sweep_reads: float
    """Read units a month."""
    built: float
    """Dollars a month: notes, reads, the QuietAccounts metric and its alarm."""
    alarm: float
    """Of `built`, the alarm, which the plan's fixed costs count with the others."""
    per_account_metrics: float
    write_per_delivery: float
    deliveries: float
    """Webhook deliveries a month at average traffic."""


def account_signal_cost(
    env: Environment, average_fraction: float, prices: Prices = LIST_PRICES, usage: Usage = ASSUMED
) -> AccountSignalCost | None:
    if env.accounts is None:
        return None
    silence = env.accounts.silence
    accounts = env.accounts.planned_accounts
    webhook_peak = sum(lane.traffic.peak_per_second for lane in env.lanes if entry(lane) == "webhook")
    deliveries = webhook_peak * average_fraction * prices.seconds_per_month
    # Little's law at peak: the instances Lambda keeps busy, and so warm.
    instances = max(1, math.ceil(webhook_peak * usage.door_seconds))
    note_writes = min(deliveries, accounts * instances * prices.seconds_per_month / silence.note_seconds)
    item_bytes = ITEM_BASE_BYTES + ITEM_BYTES_PER_SLOT * silence.slots
    sweeps = prices.seconds_per_month / env.sweeper.period_seconds
    sweep_reads = sweeps * max(1, math.ceil(accounts * item_bytes / 4096)) * 0.5
    million = 1_000_000
    built = (
        note_writes / million * prices.dynamodb_per_million_writes
        + sweep_reads / million * prices.dynamodb_per_million_reads
        + prices.metric_per_month
        + prices.alarm_per_month
    )
    return AccountSignalCost(
        accounts=accounts,
        door_instances=instances,
        note_writes=note_writes,
        sweep_reads=sweep_reads,
        built=built,
        alarm=prices.alarm_per_month,
        per_account_metrics=accounts * (prices.metric_per_month + prices.alarm_per_month),
        write_per_delivery=deliveries / million * prices.dynamodb_per_million_writes,
        deliveries=deliveries,
    )
