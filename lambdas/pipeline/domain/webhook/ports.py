"""What the webhook door needs beyond the shared ports (domain/ports.py): the delivery log, and where
it notes the source accounts it heard from."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol

# Only annotations name these, so importing the ports loads no rules: the door's cold start
# pays only for what it runs.
if TYPE_CHECKING:
    from pipeline.domain.webhook.account_silence import Account
    from pipeline.domain.webhook.delivery import LogEntry, Recorded


class DeliveryLog(Protocol):
    def record(self, entry: LogEntry) -> Recorded:
        """Write the delivery's row unless it exists. Raises WebhookLogUnavailable."""
        ...

    def mark_unsent(self, log_id: str, since: float) -> None:
        """Put the row where the sweeper looks; raises when it could not."""
        ...


class AccountNotes(Protocol):
    def note(self, accounts: Sequence[Account], now: float) -> int:
        """Stamp when each source account was last heard from, at most once per account per
        interval per instance (adapters/accounts_seen.py); the writes made. Raises on a failure."""
        ...
