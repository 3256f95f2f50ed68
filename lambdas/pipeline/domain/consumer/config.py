"""What a lane's consumer is built from: its settings, and the ports it calls (domain/ports.py)."""

from __future__ import annotations

from dataclasses import dataclass, field

from pipeline.domain.consumer.ports import (
    Budgets,
    CallTimes,
    Drain,
    LaneQueue,
    LaneSwitch,
    ObligationStore,
    Observer,
    Reader,
)
from pipeline.domain.consumer.work import Eraser, MetaSender, ReplyCallbacks, Vendor
from pipeline.domain.dependencies.budgets import Budget
from pipeline.domain.dependencies.failure_rate import FailureWindow
from pipeline.domain.dependencies.rates import Rate, RateKeeper
from pipeline.domain.ports import Committer, SenderHasher
from pipeline.settings.auto_reply import AutoReplySettings
from pipeline.settings.lane_policy import LanePolicy
from pipeline.settings.tenant_assets import AssetBinding


@dataclass(frozen=True)
class ConsumerConfig:
    lane: LanePolicy
    dependency: Budget | None
    marker_ttl_seconds: int
    effects_retention_seconds: int
    """How long what the tasks write is kept: every write without an expiry of its own gets one."""
    send_per_second: int | None = None
    """Meta's messages a second per business phone number, on a lane that sends replies."""
    model_rate: Rate | None = None
    """The lane's dependency's requests a minute, shared by every lane that calls it."""
    assets: AssetBinding = field(default_factory=AssetBinding)
    """Which Meta assets each tenant owns: a reply goes out only through its tenant's own."""
    auto_reply: AutoReplySettings = field(default_factory=AutoReplySettings)
    """Which tenants' customers are answered without a product asking (the messages lane's)."""

    @property
    def reserve_seconds(self) -> float:
        """The least time kept back after a task for its commit and the batch's bookkeeping; more
        when the calls that need it are slow (BatchTime.settle_reserve)."""
        return min(1.0, max(0.1, (self.lane.timeout_seconds - self.lane.task_time_limit_seconds) / 2))

    @property
    def least_start_seconds(self) -> float:
        """The shortest time limit worth starting a task under. A record is run under whatever the
        invocation has left (less the reserve), up to its lane's limit; requiring the whole limit
        would let a batch start records only in its first timeout - limit - reserve seconds (one
        second locally, a sixth of the invocation in production) and re-send the rest."""
        full = self.lane.task_time_limit_seconds
        return min(full, max(self.reserve_seconds, full / 10))


@dataclass(frozen=True)
class Adapters:
    store: ObligationStore
    reader: Reader
    budgets: Budgets
    committer: Committer
    queue: LaneQueue
    drain: Drain
    observer: Observer
    vendor: Vendor
    calls: CallTimes
    senders: SenderHasher
    eraser: Eraser
    meta: MetaSender | None = None
    """Meta's send APIs, on a lane that sends replies (the ai lane); None elsewhere."""
    callbacks: ReplyCallbacks | None = None
    """The reply callback key, on the lanes that sign (ai) or verify (messages) replies' references."""
    rates: RateKeeper | None = None
    """The instance's rate budgets (domain/dependencies/rates.py); None: calls are bounded only at once."""
    switch: LaneSwitch | None = None
    """Pauses the lane (its mapping), on a lane whose dependency can refuse every record; None elsewhere."""
    failures: FailureWindow | None = None
    """This instance's calls to its model and Meta, on a lane that pauses when they fail at a
    sustained rate (LanePolicy.pause_on_failures); None elsewhere."""
