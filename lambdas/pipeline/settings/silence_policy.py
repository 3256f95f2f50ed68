"""When a Meta source account (a Page, an Instagram account, a WhatsApp Business Account) that
normally sends has gone quiet for too long: the policy the door and the sweeper are given
(stacks/config/account_silence.py writes it; domain/webhook/account_silence.py applies it)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class AccountSilence:
    note_seconds: float
    """An instance of the door writes an account's last-seen item at most once this long: what
    keeps the door at two AWS calls a delivery, amortised."""
    slot_seconds: float
    """History is kept as which slots of this length had a delivery (an hour in prod)."""
    slots: int
    """How many slots of history an account's item holds (one attribute each)."""
    active_slots: int
    """"Normally sends": deliveries in at least this many of the `slots` slots ending with the
    slot of its last delivery. Counted back from the last delivery, not from now, so a silence
    does not wear its own evidence away."""
    quiet_seconds: float
    """An account that normally sends pages once nothing came from it for this long."""
    forget_seconds: float
    """An account's item expires (TTL) this long after its last delivery: one that is gone for
    good stops paging by then, or once an operator deletes its item (docs/RUNBOOK.md, Quiet
    accounts)."""

    def __post_init__(self) -> None:
        if not 0 < self.note_seconds <= self.slot_seconds:
            # A note less often than a slot could skip a slot that had deliveries.
            raise ValueError("account silence needs 0 < note_seconds <= slot_seconds")
        if not 1 <= self.active_slots <= self.slots <= 168:
            raise ValueError("account silence needs 1 <= active_slots <= slots <= 168")
        if self.quiet_seconds <= self.note_seconds:
            raise ValueError("account silence needs quiet_seconds > note_seconds (a note may be that late)")
        if self.forget_seconds <= self.quiet_seconds:
            raise ValueError("account silence needs forget_seconds > quiet_seconds")
