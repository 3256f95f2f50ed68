"""The contract between the generic consumer and a lane's task.

A task is a plain function `run(ctx: TaskContext) -> TaskResult`:

- It reads what it needs through `ctx` (the envelope, its payload resolved from the row if it
  travelled by reference, the lane's options, consistent reads of the data and state tables).
- It calls anything external (the model) itself, inside `with ctx.dependency():` when the
  call spends a shared dependency budget. An exhausted budget raises `DependencyBusy` out of
  that block, and the consumer defers the record at no attempt's cost.
- It returns its writes and follow-up messages instead of performing them. The consumer sends
  the follow-ups, then commits the writes with the record's done-mark in one transaction. So a
  task may run twice (redelivery, a visibility timeout mid-task), but its writes land once; only
  its external calls can repeat, which is why they come first and cost no state.
- It raises `TransientError` or `PermanentError` (domain/errors.py) for failures it recognises;
  anything else is classified by the consumer.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Any, Protocol

from pipeline.domain.dependencies.meta_send import CallbackRef, ReplyTo, Sent
from pipeline.domain.dependencies.model import Completion
from pipeline.domain.effects import Table, Write
from pipeline.domain.envelope import Envelope
from pipeline.settings.auto_reply import AutoReplySettings


class Vendor(Protocol):
    """The model behind a lane (adapters/bedrock.py): one prompt in, its answer and token counts out."""

    def complete(self, prompt: str, *, timeout: float) -> Completion: ...


class TaskModel(Protocol):
    """The model as a task sees it (`ctx.vendor`): the answer's text. The consumer counts the
    tokens each call spent for the lane's metric and the record's line."""

    def complete(self, prompt: str, *, timeout: float) -> str: ...


class ReplyCallbacks(Protocol):
    """Signs the reference a reply is sent with, and verifies one a status carries back
    (adapters/callback_key.py). Raises CallbackKeyUnavailable when the key cannot be read."""

    def sign(self, ref: CallbackRef) -> str: ...

    def verify(self, value: str) -> CallbackRef | None: ...


class MetaSender(Protocol):
    """Meta's send APIs (adapters/graph_api.py). Raises domain/dependencies/meta_send.py's errors: refused
    (not sent), rejected (never will be), token invalid, not sent, or outcome unknown."""

    def send(self, reply_to: ReplyTo, text: str, callback: str, *, timeout: float) -> Sent: ...


@dataclass(frozen=True)
class Erasable:
    """What the jobs and data tables hold for one person: their indexes, and the person's own
    partition of the data table."""

    job_ids: tuple[str, ...] = ()
    data_keys: tuple[tuple[str, str], ...] = ()
    """(pk, sk) of data-table items."""
    linked: tuple[str, ...] = ()
    """Hashes of the person's other ids, read off what was found: a WhatsApp customer's phone
    number and business-scoped id are linked by their items (tasks/messages.py)."""

    @property
    def empty(self) -> bool:
        return not (self.job_ids or self.data_keys)


@dataclass(frozen=True)
class RowsPage:
    """One page of a scan of the webhook log for the rows that name a person."""

    log_ids: tuple[str, ...]
    resume_from: Mapping[str, Any] | None
    """Where the next page starts (opaque to the task, JSON); None once the whole log was read."""


class Eraser(Protocol):
    """Finding and erasing one person's rows and items (adapters/erasure.py). Every call is safe to
    repeat: an erasure that dies half way is run again from where it last said it got to."""

    def scan_rows(self, sender_hashes: Sequence[str], start: Mapping[str, Any] | None) -> RowsPage:
        """A page of the webhook log's rows that name any of `sender_hashes`, from `start` (None:
        the top)."""
        ...

    def find(self, sender_hash: str) -> Erasable: ...

    def erase_log_rows(self, log_ids: Sequence[str]) -> tuple[int, int]:
        """Empty each row to its tombstone and delete its body parts: (rows, parts)."""
        ...

    def erase_jobs(self, job_ids: Sequence[str]) -> int:
        """Empty each job row to its tombstone (a queued one leaves its tenant's count)."""
        ...

    def note_progress(self, job_id: str, progress: Mapping[str, Any]) -> None:
        """Keep the erasure's progress, and the time, on its own pending job row."""
        ...

    def delete(self, table: Table, keys: Sequence[Mapping[str, str]]) -> int:
        """Delete items of the data or state table."""
        ...


class TaskContext(Protocol):
    envelope: Envelope
    payload: Any
    lane: str
    now: float
    """Epoch seconds when the task started; use it for every timestamp the task writes."""
    vendor: TaskModel
    meta: MetaSender
    """Only the reply task sends (tasks/replies.py), after recording the attempt with `write_now`."""
    callbacks: ReplyCallbacks
    """The ai lane signs its replies' references; the messages lane verifies the statuses' ones."""
    eraser: Eraser
    """Only the erasure task uses it (tasks/erase.py): the one task that removes what others wrote."""
    row_names_everyone: bool
    """The record's webhook row carries the hash of every person its delivery names
    (schema.SENDER_HASHES), so the erasure's scan of the log finds it without an item per person."""

    auto_reply: AutoReplySettings
    """Which tenants' customers are answered without a product asking (tasks/auto_reply.py)."""

    def option(self, name: str, default: str) -> str:
        """One of the lane's task options from the catalogue, as text."""
        ...

    def owner_of(self, asset: str) -> str | None:
        """The tenant that owns a Meta asset (a WhatsApp Business Account, phone-number, Page or
        Instagram id; settings/tenant_assets.py), or None when none does."""
        ...

    def read(self, table: Table, key: Mapping[str, Any]) -> dict[str, Any] | None:
        """A strongly consistent read of one item of the data or state table."""
        ...

    def write_now(self, write: Write) -> bool:
        """Apply one conditional write at once, before anything else the task does: the record of
        an attempt at an external call that must not be repeated (a send to Meta). True when it
        landed; False when its condition failed (someone else recorded first)."""
        ...

    def bound(self, reply_to: ReplyTo) -> ReplyTo:
        """`reply_to` when the envelope's tenant owns the Meta asset it sends from
        (settings/tenant_assets.py); ReplyToRefused (`reply_asset_not_bound`, permanent) otherwise.
        `send_room` and `meta.send` check it too, so no path sends through another tenant's asset."""
        ...

    def send_room(self, reply_to: ReplyTo) -> None:
        """Count one send against the sending number's rate budget (domain/dependencies/rates.py), before the
        attempt is recorded; raises DependencyBusy when its second is full, which defers the
        record without spending an attempt. Refuses a `reply_to` its tenant does not own (`bound`)
        before counting anything."""
        ...

    def dependency(self) -> AbstractContextManager[None]:
        """Hold a slot of the lane's shared dependency budget for the duration of the block."""
        ...

    def remaining(self) -> float:
        """Seconds left before the task's hard time limit: the timeout for external calls."""
        ...

    def sender_hash(self, person: str) -> str | None:
        """The index key of a person an item is about (domain/senders.py), for its `sender_hash`
        attribute, so an erasure request finds the item; None for an empty id."""
        ...


@dataclass(frozen=True)
class FollowUp:
    """A message the task wants on its own lane (e.g. a coalesced reply turn a few seconds out),
    or on the lane its envelope names when the consumer holds that lane's queue (the messages
    lane's auto-reply turns, sent to the ai lane).
    Sent before the commit, so a crash in between repeats it rather than loses it: follow-ups
    must be idempotent by id (the consumer's done-marker makes a repeated id a no-op)."""

    envelope: Envelope
    delay_seconds: int = 0


@dataclass(frozen=True)
class TaskResult:
    writes: tuple[Write, ...] = ()
    follow_ups: tuple[FollowUp, ...] = ()
    superseded: bool = False
    """The task found newer work that makes this record moot: nothing to write but the done-mark."""
    detail: Mapping[str, Any] = field(default_factory=dict)
    """Small facts for the record's log line (counts, labels), never payload contents."""
    result: Mapping[str, int] = field(default_factory=dict)
    """What a job's caller is shown once it is done (`GET /jobs/{id}`, an erasure's status): counts
    of what the work did, never payload contents. Kept on the job's row; other records have none."""

    @property
    def keyed(self) -> bool:
        """Writes only, each idempotent by its own key (`standalone`): applying them again changes
        nothing, so the writes themselves can say the work was done."""
        return (
            bool(self.writes)
            and not self.follow_ups
            and not self.superseded
            and all(write.standalone for write in self.writes)
        )


TaskFn = Callable[[TaskContext], TaskResult]
