"""Which environments watch Meta's source accounts one by one, how, and for how many accounts.

The pipeline-wide `WebhooksQuiet` alarm (AlarmConfig.webhooks_quiet_seconds) cannot see one
account going quiet while the others send: a Page whose subscription Meta disabled, or that
removed the app. Per account, the door stamps when it last heard from it and the sweeper counts
the accounts that normally send and are quiet too long (lambdas/pipeline/domain/webhook/account_silence.py),
one series and one alarm (`QuietAccounts`) whatever the number of accounts. `lanectl plan` prices
it and the alternatives at `planned_accounts` (ops/cost/account_signal.py). At prod's 1,000
accounts, 25% of peak traffic on average (148M deliveries a month) and 7 door instances: the
hourly stamps at most 5.1M write units ($3.19, at most 0.035 calls a delivery), the sweeps' reads
0.73M read units ($0.09), the metric and the alarm $0.40, so $3.69 a month; a metric and an alarm
per account would be $400 a month (and could not tell an account that pauses from one that
stopped); a write per delivery $92.39 and a third AWS call on every delivery.
"""

from __future__ import annotations

from dataclasses import dataclass

from pipeline.settings.silence_policy import AccountSilence

HOUR = 3600
DAY = 24 * HOUR


@dataclass(frozen=True)
class AccountWatch:
    silence: AccountSilence
    planned_accounts: int
    """Source accounts (Pages, Instagram accounts, WhatsApp Business Accounts) the environment
    plans for: what the signal and its alternatives are priced at."""

    def __post_init__(self) -> None:
        if self.planned_accounts < 1:
            raise ValueError("planned_accounts must be >= 1")


PROD_ACCOUNTS = AccountWatch(
    # Heard from in at least 20 of the 24 hours up to its last delivery: a business that sends
    # around the clock. One that sends only by day never qualifies, so no night pages it; the
    # pipeline-wide alarm still covers everything going quiet at once.
    silence=AccountSilence(
        # Once an hour per account per door instance: at prod's planned average (56 deliveries a
        # second, 7 instances, 1,000 accounts) at most 0.035 writes a delivery.
        note_seconds=HOUR,
        slot_seconds=HOUR,
        slots=24,
        active_slots=20,
        # Meta disables a failing Page subscription after an hour; two hours of silence from an
        # account that never pauses is a subscription lost, not a lull. With hourly notes the page
        # comes one to two hours after its last delivery.
        quiet_seconds=2 * HOUR,
        forget_seconds=7 * DAY,
    ),
    # The runbook's planning figure for prod (docs/RUNBOOK.md, "Webhooks quiet").
    planned_accounts=1000,
)

LOCAL_ACCOUNTS = AccountWatch(
    # Prod's rule on the local environment's clocks in seconds: an hour's slot is 2 s, a note
    # once a slot, quiet after two slots; six slots of history, five of them with deliveries.
    silence=AccountSilence(
        note_seconds=2,
        slot_seconds=2,
        slots=6,
        active_slots=5,
        quiet_seconds=4,
        forget_seconds=600,
    ),
    planned_accounts=50,
)
