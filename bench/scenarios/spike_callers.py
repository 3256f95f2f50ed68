"""Scenario 5's callers: AI reply jobs posted on a schedule with a spike in it, each caller giving up
after its timeout and posting again, and the record of what each attempt got."""

from __future__ import annotations

import heapq
import threading
import time
import uuid
from dataclasses import dataclass, field
from typing import Protocol

from bench.scenarios.measure import per_second
from ops.drive import Session
from pipeline.tasks import ai


class Schedule(Protocol):
    """What the callers read of their scenario's parameters (scenario 5's Params has these)."""

    @property
    def base_per_second(self) -> float: ...

    @property
    def spike_per_second(self) -> float: ...

    @property
    def spike_at(self) -> float: ...

    @property
    def spike_seconds(self) -> float: ...

    @property
    def seconds(self) -> float: ...

    @property
    def timeout(self) -> float: ...

    @property
    def retries(self) -> int: ...


LANE = "ai"


@dataclass
class Attempt:
    request: int
    number: int
    conversation: str
    sent: float
    gives_up: float
    tenant: str = ""
    job: str | None = None
    status: int = 0


@dataclass
class Phase:
    label: str
    started: float = 0.0
    attempts: list[Attempt] = field(default_factory=list)
    useful: list[float] = field(default_factory=list)
    """When each useful reply finished."""
    wasted_turns: int = 0
    """Replies finished after their caller had given up: model calls nobody waited for."""
    expired: int = 0
    failed_requests: int = 0
    requests: int = 0
    backlog_end: int = 0
    model_calls: int = 0

    @property
    def useful_share(self) -> float:
        return len(self.useful) / self.model_calls if self.model_calls else 0.0

    def rate(self, bin_seconds: float = 1.0) -> list[float]:
        return per_second(self.useful, self.started, self.started + self._span, bin_seconds)

    @property
    def _span(self) -> float:
        return max([a.gives_up for a in self.attempts] + [self.started]) - self.started


def arrivals(p: Schedule) -> list[float]:
    """Offsets of new requests: evenly spaced at the base rate, at the spike rate during the spike."""
    out, t = [], 0.0
    while t < p.seconds:
        out.append(t)
        spiking = p.spike_at <= t < p.spike_at + p.spike_seconds
        t += 1 / (p.spike_per_second if spiking else p.base_per_second)
    return out


def turn_id(attempt: Attempt) -> str:
    return ai.turn_id(attempt.tenant, attempt.conversation, "m0")


class Callers:
    """Callers with a timeout: each request is posted, checked when its caller gives up, and posted
    again (a new job) if no reply arrived in time, up to `retries` times."""

    def __init__(self, s: Session, p: Schedule, phase: Phase, *, deadlines: bool) -> None:
        self._s, self._p, self._phase, self._deadlines = s, p, phase, deadlines
        self._tag = uuid.uuid4().hex[:6]
        self._lock = threading.Lock()
        # (when, request, code): code >= 0 posts attempt `code`; code < 0 checks attempt -code - 1
        self._agenda: list[tuple[float, int, int]] = []
        for n, offset in enumerate(arrivals(p)):
            heapq.heappush(self._agenda, (phase.started + offset, n, 0))
        phase.requests = len(self._agenda)

    def _useful(self, attempt: Attempt) -> bool:
        line = self._s.log.first_terminal.get(turn_id(attempt))
        return line is not None and line.outcome == "done" and line.at <= attempt.gives_up

    def _post(self, request: int, number: int) -> None:
        now = time.time()
        conversation = f"conv-{self._tag}-{request}-{number}"
        tenant = f"shop-{request % 20}-{self._tag}"
        attempt = Attempt(request, number, conversation, now, now + self._p.timeout, tenant=tenant)
        response = self._s.client.submit_job(
            lane=LANE,
            kind="ai.inbound",
            tenant=tenant,
            payload={"conversation": conversation, "message_id": "m0", "text": f"where is order {request}?"},
            deadline=attempt.gives_up if self._deadlines else None,
        )
        attempt.status = response.status
        if response.status == 202:
            attempt.job = str(response.json()["id"])
            check_at = attempt.gives_up
        else:  # shed: the caller comes back after Retry-After, or when it would have given up anyway
            check_at = time.time() + min(self._p.timeout, float(response.headers.get("retry-after") or 1))
        with self._lock:
            self._phase.attempts.append(attempt)
            heapq.heappush(self._agenda, (check_at, request, -(number + 1)))

    def _check(self, request: int, number: int) -> None:
        with self._lock:
            attempt = next(a for a in reversed(self._phase.attempts) if a.request == request and a.number == number)
        if attempt.status == 202 and self._useful(attempt):
            return
        if number < self._p.retries and time.time() < self._phase.started + self._p.seconds:
            with self._lock:
                heapq.heappush(self._agenda, (time.time(), request, number + 1))
        else:
            with self._lock:
                self._phase.failed_requests += 1

    def _next(self) -> tuple[float, int, int] | None:
        with self._lock:
            if self._agenda and self._agenda[0][0] <= time.time():
                return heapq.heappop(self._agenda)
        return None

    def _work(self, ends: float) -> None:
        while time.time() < ends:
            item = self._next()
            if item is None:
                time.sleep(0.01)
                continue
            _, request, code = item
            if code >= 0:
                self._post(request, code)
            else:
                self._check(request, -code - 1)

    def run(self, threads: int) -> None:
        ends = self._phase.started + self._p.seconds + self._p.timeout + 1
        workers = [
            threading.Thread(target=self._work, args=(ends,), name=f"caller-{i}", daemon=True) for i in range(threads)
        ]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join(timeout=ends - time.time() + 30)
