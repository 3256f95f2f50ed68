"""The TaskContext the consumer hands a task (see domain/consumer/work.py for the contract)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from pipeline.domain import senders
from pipeline.domain.consumer.ports import Budgets, Reader
from pipeline.domain.consumer.work import Eraser, MetaSender, ReplyCallbacks, TaskModel, Vendor
from pipeline.domain.dependencies.budgets import Budget, Grant
from pipeline.domain.dependencies.meta_send import ReplyTo, SendRefused, Sent
from pipeline.domain.dependencies.model import ModelThrottled
from pipeline.domain.dependencies.rates import Rate, RateKeeper, whatsapp_number
from pipeline.domain.effects import TASK_TABLES, Table, Write
from pipeline.domain.envelope import Envelope
from pipeline.domain.errors import DependencyBusy
from pipeline.settings.auto_reply import AutoReplySettings
from pipeline.settings.tenant_assets import AssetBinding


class TaskRun:
    def __init__(
        self,
        *,
        envelope: Envelope,
        payload: Any,
        lane: str,
        options: Mapping[str, str],
        now: float,
        vendor: Vendor,
        reader: Reader,
        meta: MetaSender,
        callbacks: ReplyCallbacks,
        write_now: Callable[[Write], bool],
        budgets: Budgets,
        dependency: Budget | None,
        limit_seconds: float,
        on_over_budget: Callable[[Grant], None],
        hasher: Callable[[str], str],
        eraser: Eraser,
        row_names_everyone: bool = False,
        monotonic: Callable[[], float] = time.monotonic,
        rates: RateKeeper | None = None,
        send_per_second: int | None = None,
        model_rate: Rate | None = None,
        assets: AssetBinding | None = None,
        auto_reply: AutoReplySettings | None = None,
    ) -> None:
        self.envelope = envelope
        self.payload = payload
        self.lane = lane
        self.now = now
        self.vendor: TaskModel = _Watched(vendor, self)
        self.eraser = eraser
        self.row_names_everyone = row_names_everyone
        self.meta: MetaSender = _Sending(meta, self)
        self.callbacks = callbacks
        self._write_now = write_now
        self.called_out = False
        """Whether the task called the vendor or held its dependency: such work is not safe to
        repeat just because its writes are (see marks.effect_is_mark)."""
        self.input_tokens = 0
        self.output_tokens = 0
        """What the task's model calls spent, as the model counted them."""
        self._options = options
        self._reader = reader
        self._budgets = budgets
        self._dependency = dependency
        self._limit = limit_seconds
        self._on_over_budget = on_over_budget
        self._hasher = hasher
        self._monotonic = monotonic
        self._deadline = monotonic() + limit_seconds
        self._rates = rates
        self._send_per_second = send_per_second
        self._model_rate = model_rate
        self._assets = assets or AssetBinding()
        self.auto_reply = auto_reply or AutoReplySettings()

    def option(self, name: str, default: str) -> str:
        return self._options.get(name, default)

    def read(self, table: Table, key: Mapping[str, Any]) -> dict[str, Any] | None:
        if table not in TASK_TABLES:
            raise ValueError(f"tasks read the data and state tables, not {table}")
        return self._reader.read(table, key)

    def write_now(self, write: Write) -> bool:
        if write.table not in TASK_TABLES:
            raise ValueError(f"tasks write the data and state tables, not {write.table}")
        return self._write_now(write)

    def remaining(self) -> float:
        return max(0.0, self._deadline - self._monotonic())

    def sender_hash(self, person: str) -> str | None:
        return self._hasher(person) if senders.normalise(person) else None

    def send_rate(self, reply_to: ReplyTo) -> Rate | None:
        if self._rates is None or self._send_per_second is None:
            return None
        return whatsapp_number(reply_to.business_id, self._send_per_second)

    def bound(self, reply_to: ReplyTo) -> ReplyTo:
        """`reply_to` when the envelope's tenant owns the asset it sends from; ReplyToRefused
        (`reply_asset_not_bound`) otherwise. Checked before the send's rate is counted and again
        before the call, whatever path the work came by (a job, a redrive, a replay)."""
        return reply_to.check_bound(self.envelope.tenant, self._assets)

    def owner_of(self, asset: str) -> str | None:
        return self._assets.owner_of(asset)

    def send_room(self, reply_to: ReplyTo) -> None:
        rate = self.send_rate(self.bound(reply_to))
        if rate is not None:
            self._take(rate)

    def _take(self, rate: Rate) -> None:
        assert self._rates is not None
        try:
            taken = self._rates.take(rate)
        except Exception as exc:
            # Fail closed, as the concurrency budget does: the rate is someone else's to enforce.
            raise DependencyBusy(f"{rate.key} could not be counted: {type(exc).__name__}") from exc
        if not taken:
            raise DependencyBusy(f"{rate.key} is at its rate of {rate.limit} in {rate.window_seconds:g} s")

    def throttled(self, rate: Rate | None, hold_seconds: float = 0.0) -> None:
        if rate is not None and self._rates is not None:
            self._rates.throttled(rate, hold_seconds)

    @contextmanager
    def dependency(self) -> Iterator[None]:
        self.called_out = True
        rate = self._model_rate if self._rates is not None else None
        if rate is not None:
            self._take(rate)
        with self._held():
            try:
                yield
            except ModelThrottled:
                self.throttled(rate)
                raise

    @contextmanager
    def _held(self) -> Iterator[None]:
        budget = self._dependency
        if budget is None:
            yield
            return
        # Held for at most the task's limit (plus slack for clock skew between instances): a task
        # past its limit is abandoned by the consumer, and its slot must come back on its own.
        try:
            grant = self._budgets.acquire(budget, 1, self._limit + 5.0)
        except Exception as exc:
            # Fail closed: this budget protects someone else's quota, and an unreadable counter is
            # no licence to exceed it. Deferring costs the record no attempt.
            raise DependencyBusy(f"{budget.key} could not be read: {exc}") from exc
        if grant.granted < 1:
            raise DependencyBusy(f"{budget.key} is at its limit of {budget.limit}")
        if grant.over:
            self._on_over_budget(grant)
        try:
            yield
        finally:
            self._budgets.release(grant)


class _Watched:
    def __init__(self, vendor: Vendor, run: TaskRun) -> None:
        self._vendor = vendor
        self._run = run

    def complete(self, prompt: str, *, timeout: float) -> str:
        self._run.called_out = True
        answer = self._vendor.complete(prompt, timeout=timeout)
        # A task may call from several threads of its own (engagement labels a page's comments).
        with _TOKENS:
            self._run.input_tokens += answer.input_tokens
            self._run.output_tokens += answer.output_tokens
        return answer.text


_TOKENS = threading.Lock()


class _Sending:
    def __init__(self, sender: MetaSender, run: TaskRun) -> None:
        self._sender = sender
        self._run = run

    def send(self, reply_to: ReplyTo, text: str, callback: str, *, timeout: float) -> Sent:
        self._run.bound(reply_to)
        self._run.called_out = True
        try:
            return self._sender.send(reply_to, text, callback, timeout=timeout)
        except SendRefused as refused:
            if refused.number_over_rate:
                # The number is over its rate: its other replies, on every instance, wait out
                # its window too. A pair-rate refusal is one customer's, and slows nobody else.
                rate = self._run.send_rate(reply_to)
                self._run.throttled(rate, rate.window_seconds if rate is not None else 0.0)
            raise
