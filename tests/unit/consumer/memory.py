"""The ports of the record pipeline (domain/consumer/batch.py) in memory: no AWS, no moto.

Each port keeps what it was asked in plain lists, so a test reads what an operator would see:
the batch's answer, the rows' statuses, what was re-sent, dead-lettered, counted and logged.
The stores apply the same conditions the DynamoDB adapters do (a row moves only from the status
read; an internal marker is created only once), so races between copies behave as on AWS.
What the AWS adapters themselves do is tested against moto in the other consumer tests.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pipeline import schema
from pipeline.domain.consumer import marks
from pipeline.domain.consumer.outcomes import RecordOutcome
from pipeline.domain.consumer.ports import location_id
from pipeline.domain.consumer.records import Received
from pipeline.domain.consumer.work import FollowUp
from pipeline.domain.dependencies import budgets as budget_rules
from pipeline.domain.dependencies.budgets import Budget, Grant
from pipeline.domain.dependencies.model import Completion
from pipeline.domain.effects import Put, Table, Update, Write
from pipeline.domain.envelope import Envelope
from pipeline.domain.ports import CommitResult, CommitState

NOW = 1_800_000_000.0
LANE = "messages"


class PortDown(ConnectionError):
    """A port that cannot be reached (classified transient, as a dropped connection is)."""


@dataclass
class MemoryStore:
    """Rows, markers and task items, keyed as `location_id` keys them."""

    items: dict[str, dict[str, Any]] = field(default_factory=dict)
    lookup_error: BaseException | None = None
    lookups: int = 0

    def put(self, table: Table, key: Mapping[str, Any], item: Mapping[str, Any]) -> None:
        self.items[location_id(table, key)] = {**key, **item}

    def get(self, table: Table, key: Mapping[str, Any]) -> dict[str, Any] | None:
        return self.items.get(location_id(table, key))

    def lookup(self, locations: Sequence[tuple[Table, Mapping[str, Any]]]) -> dict[str, Mapping[str, Any] | None]:
        self.lookups += 1
        if self.lookup_error is not None:
            raise self.lookup_error
        return {location_id(t, k): self.items.get(location_id(t, k)) for t, k in locations}

    def payload(self, envelope: Envelope, found: Mapping[str, Any] | None) -> Any:
        if envelope.payload is not None:
            return envelope.payload
        return (found or {}).get("payload")

    def read(self, table: Table, key: Mapping[str, Any]) -> dict[str, Any] | None:
        return self.get(table, key)

    def row(self, table: Table, row_id: str) -> dict[str, Any] | None:
        return self.get(table, {schema.ID: row_id})

    def marker(self, work_id: str) -> dict[str, Any] | None:
        return self.get(Table.STATE, {schema.PK: marks.marker_key(LANE, work_id)})


def _holds(store: MemoryStore, mark: Write) -> bool:
    """The done-mark's condition, as DynamoDB would evaluate it on the stored item."""
    if isinstance(mark, Put):
        return store.get(mark.table, {schema.PK: mark.item[schema.PK]}) is None
    assert isinstance(mark, Update)
    current = store.get(mark.table, mark.key) or {}
    return current.get(marks.STATUS) == mark.values[":read"]


def _apply_mark(store: MemoryStore, mark: Write) -> None:
    if isinstance(mark, Put):
        store.put(mark.table, {schema.PK: mark.item[schema.PK]}, mark.item)
        return
    assert isinstance(mark, Update)
    current = dict(store.get(mark.table, mark.key) or {})
    for placeholder, name in mark.names.items():
        if ":" + placeholder[1:] in mark.values:
            current[name] = mark.values[":" + placeholder[1:]]
    if "REMOVE #shard" in mark.expression:
        current.pop(schema.PENDING_SHARD, None)
    store.put(mark.table, mark.key, current)


@dataclass
class MemoryCommitter:
    """Commits a done-mark with its writes, all or nothing, as the transaction adapter does.
    `state`: what the writes' own conditions make of an otherwise successful commit (SUPERSEDED:
    a newer result won; only the mark lands). `error`: the commit cannot be made at all."""

    store: MemoryStore
    state: CommitState = CommitState.COMMITTED
    skipped: int = 0
    error: BaseException | None = None
    note_error: BaseException | None = None
    landed: list[Write] = field(default_factory=list)
    """The task's writes that were committed (never a mark)."""
    marks: list[Write] = field(default_factory=list)
    notes: list[Write] = field(default_factory=list)
    """Retry notes: a mark committed with no writes on a row that stays open."""
    applied: list[tuple[Write, ...]] = field(default_factory=list)
    before_commit: Callable[[], None] | None = None

    def commit(
        self, mark: Write, writes: Sequence[Write], *, resume_from: int = 0, room: Callable[[], bool] | None = None
    ) -> CommitResult:
        if self.before_commit is not None:
            hook, self.before_commit = self.before_commit, None
            hook()
        is_note = isinstance(mark, Update) and "#finished_at" not in mark.names
        error = self.note_error if is_note else self.error
        if error is not None:
            raise error
        if not _holds(self.store, mark):
            return CommitResult(CommitState.DUPLICATE)
        _apply_mark(self.store, mark)
        (self.notes if is_note else self.marks).append(mark)
        if self.state is CommitState.SUPERSEDED:
            return CommitResult(CommitState.SUPERSEDED)
        self.landed.extend(writes)
        return CommitResult(CommitState.COMMITTED, skipped=self.skipped)

    def apply(
        self, writes: Sequence[Write], *, resume_from: int = 0, room: Callable[[], bool] | None = None
    ) -> CommitResult:
        if self.error is not None:
            raise self.error
        self.applied.append(tuple(writes))
        self.landed.extend(writes)
        return CommitResult(self.state, skipped=self.skipped)


@dataclass
class MemoryQueue:
    """The lane queue and its DLQ. `refuse`: positions of a deferral batch SQS does not accept."""

    sent: list[FollowUp] = field(default_factory=list)
    resent: list[tuple[Envelope, int]] = field(default_factory=list)
    dead: list[tuple[str, dict[str, str]]] = field(default_factory=list)
    visibility: list[tuple[str, int]] = field(default_factory=list)
    refuse: set[int] = field(default_factory=set)
    defer_error: BaseException | None = None
    send_error: BaseException | None = None
    dead_letter_error: BaseException | None = None
    visibility_error: BaseException | None = None
    visibility_refused: int = 0

    def send(self, follow_ups: Sequence[FollowUp]) -> None:
        if self.send_error is not None:
            raise self.send_error
        self.sent.extend(follow_ups)

    def defer(self, items: Sequence[tuple[Envelope, int]]) -> set[int]:
        if self.defer_error is not None:
            raise self.defer_error
        self.resent.extend(item for position, item in enumerate(items) if position not in self.refuse)
        return {position for position in self.refuse if position < len(items)}

    def dead_letter(self, body: str, attributes: Mapping[str, str]) -> None:
        if self.dead_letter_error is not None:
            raise self.dead_letter_error
        self.dead.append((body, dict(attributes)))

    def set_visibility(self, items: Sequence[tuple[str, int]]) -> int:
        if self.visibility_error is not None:
            raise self.visibility_error
        self.visibility.extend(items)
        return self.visibility_refused


@dataclass
class MemoryBudgets:
    """Lease counters by budget key, without expiry (a test's batch outlives no lease)."""

    in_use: dict[str, int] = field(default_factory=dict)
    error: BaseException | None = None
    acquired: list[tuple[Budget, int, float]] = field(default_factory=list)
    released: list[Grant] = field(default_factory=list)

    def acquire(self, budget: Budget, slots: int, hold_seconds: float) -> Grant:
        if self.error is not None:
            raise self.error
        self.acquired.append((budget, slots, hold_seconds))
        book = budget_rules.LeaseBook(self.in_use.get(budget.key, 0), ())
        share = budget_rules.share(book, NOW, slots, budget)
        self.in_use[budget.key] = book.in_use + share.take
        enforced = budget.mode is budget_rules.Mode.ENFORCE
        return Grant(
            budget=budget,
            requested=slots,
            granted=slots - share.over if enforced else slots,
            over=share.over,
            lease_id=f"lease-{len(self.acquired)}" if share.take else None,
            slots=share.take,
        )

    def release(self, grant: Grant) -> None:
        self.released.append(grant)
        self.in_use[grant.budget.key] -= grant.slots


@dataclass
class MemoryDrain:
    counts: list[tuple[int, float]] = field(default_factory=list)
    error: BaseException | None = None

    def record(self, count: int, now: float) -> None:
        if self.error is not None:
            raise self.error
        self.counts.append((count, now))


@dataclass
class MemoryObserver:
    outcomes: list[tuple[Received, RecordOutcome]] = field(default_factory=list)
    problems: list[tuple[str, BaseException | None, dict[str, Any]]] = field(default_factory=list)
    over: list[tuple[str, Grant]] = field(default_factory=list)
    late: list[tuple[int, float]] = field(default_factory=list)
    paused: list[str] = field(default_factory=list)
    tokens: list[tuple[int, int]] = field(default_factory=list)
    outcome_error: BaseException | None = None
    over_budget_error: BaseException | None = None

    def outcome(self, received: Received, outcome: RecordOutcome) -> None:
        if self.outcome_error is not None:
            raise self.outcome_error
        self.outcomes.append((received, outcome))

    def over_budget(self, received: Received, grant: Grant) -> None:
        if self.over_budget_error is not None:
            raise self.over_budget_error
        self.over.append((received.message_id, grant))

    def problem(self, message: str, exc: BaseException | None = None, **fields: Any) -> None:
        self.problems.append((message, exc, fields))

    def lane_paused(self, reason: str) -> None:
        self.paused.append(reason)

    def model_tokens(self, input_tokens: int, output_tokens: int) -> None:
        self.tokens.append((input_tokens, output_tokens))

    def out_of_time(self, records: int, remaining_seconds: float) -> None:
        self.late.append((records, remaining_seconds))

    def by_id(self) -> dict[str, RecordOutcome]:
        """The outcome each message got, by message id."""
        return {received.message_id: outcome for received, outcome in self.outcomes}


@dataclass
class MemoryCalls:
    """The consumer's call times: `slowest` is what this invocation has seen so far."""

    slowest_now: float = 0.0
    previous: float = 0.0

    def slowest(self) -> float:
        return self.slowest_now

    def restart(self) -> float:
        return self.previous


class Hasher:
    def hash(self, sender: str) -> str:
        return hashlib.sha256(sender.encode()).hexdigest()[:32]


class NoVendor:
    def complete(self, prompt: str, *, timeout: float) -> Completion:
        return Completion("ok", input_tokens=7, output_tokens=1)


class NoEraser:
    def __getattr__(self, name: str) -> Any:
        raise AssertionError(f"the pipeline's tests erase nothing ({name})")


@dataclass
class MemorySwitch:
    """The lane's mapping: `pauses` counts the calls that disabled it; `error` makes them fail."""

    pauses: int = 0
    error: BaseException | None = None
    reasons: list[str] = field(default_factory=list)

    def pause(self, reason: str) -> None:
        if self.error is not None:
            raise self.error
        self.pauses += 1
        self.reasons.append(reason)
