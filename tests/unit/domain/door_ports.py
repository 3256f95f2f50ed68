"""In-memory implementations of the doors' ports (domain/ports.py), for testing their rules alone.

They stand in for the protocols, not for AWS: what each adapter does against DynamoDB, SQS and
Secrets Manager is tested on moto (tests/unit/ingress, tests/unit/jobs, tests/unit/privacy). Each
records what the rules asked of it, and fails on demand with the error its adapter raises.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from pipeline import schema
from pipeline.domain.envelope import Outgoing
from pipeline.domain.erasure import requests as erasure
from pipeline.domain.erasure.requests import ErasuresBusy, Requested
from pipeline.domain.http import HttpRequest
from pipeline.domain.jobs.admission import LaneSnapshot
from pipeline.domain.jobs.requests import Created, CreateResult, Duplicate, Job, JobRequest, TenantLimited
from pipeline.domain.meta_secret import MetaSecrets
from pipeline.domain.senders import SenderKeyUnavailable
from pipeline.domain.webhook.delivery import LogEntry, Recorded, WebhookLogUnavailable
from tests.support.aws import http_api_event

NOW = 1_800_000_000.0
APP_SECRET = "app-secret"
VERIFY_TOKEN = "verify-token"
QUEUE_URLS = {lane: f"https://sqs.test/{lane}" for lane in ("messages", "engagement", "ai", "bulk", "scheduled")}


def request(method: str, path: str = "/", **kwargs: Any) -> HttpRequest:
    return HttpRequest.from_event(http_api_event(method, path, **kwargs))


def body_of(reply: Any) -> Any:
    return json.loads(reply.body)


@dataclass
class Telemetry:
    """Every log line as (level, message, fields) and every count as (name, dimensions)."""

    lines: list[tuple[str, str, dict[str, Any]]] = field(default_factory=list)
    counts: list[tuple[str, dict[str, str]]] = field(default_factory=list)
    fields: dict[str, Any] = field(default_factory=dict)

    def bind(self, **fields: Any) -> Telemetry:
        return Telemetry(self.lines, self.counts, {**self.fields, **fields})

    def _log(self, level: str, message: str, fields: dict[str, Any]) -> None:
        self.lines.append((level, message, {**self.fields, **fields}))

    def info(self, message: str, **fields: Any) -> None:
        self._log("info", message, fields)

    def warning(self, message: str, **fields: Any) -> None:
        self._log("warning", message, fields)

    def error(self, message: str, **fields: Any) -> None:
        self._log("error", message, fields)

    def critical(self, message: str, **fields: Any) -> None:
        self._log("critical", message, fields)

    def exception(self, message: str, **fields: Any) -> None:
        self._log("exception", message, fields)

    def count(self, name: str, /, **dimensions: str) -> None:
        self.counts.append((name, dict(dimensions)))

    def count_also_by(self, name: str, also_by: Mapping[str, str], /, **dimensions: str) -> None:
        self.counts.append((name, dict(dimensions)))

    def levels(self) -> list[str]:
        return [level for level, _, _ in self.lines]


@dataclass
class Secrets:
    current: MetaSecrets = field(default_factory=lambda: MetaSecrets(APP_SECRET, VERIFY_TOKEN))
    newer: MetaSecrets | None = None
    """What an early read finds (None: nothing newer, or too soon to look)."""
    error: Exception | None = None
    refreshes: int = 0

    def get(self) -> MetaSecrets:
        if self.error is not None:
            raise self.error
        return self.current

    def refresh(self) -> MetaSecrets | None:
        self.refreshes += 1
        return self.newer


@dataclass
class Hasher:
    unavailable: bool = False
    asked: list[str] = field(default_factory=list)

    def hash(self, sender: str) -> str:
        self.asked.append(sender)
        if self.unavailable:
            raise SenderKeyUnavailable("the sender key could not be read")
        return f"hash-of-{sender}"


@dataclass
class Queue:
    fails: bool = False
    sent: list[tuple[str, Outgoing]] = field(default_factory=list)

    def send(self, queue_url: str, message: Outgoing) -> str:
        if self.fails:
            raise RuntimeError("SQS is down")
        self.sent.append((queue_url, message))
        return f"message-{len(self.sent)}"


@dataclass
class DeliveryLog:
    rows: dict[str, LogEntry] = field(default_factory=dict)
    statuses: dict[str, str] = field(default_factory=dict)
    unsent: list[tuple[str, float]] = field(default_factory=list)
    write_fails: bool = False
    mark_fails: bool = False

    def record(self, entry: LogEntry) -> Recorded:
        if self.write_fails:
            raise WebhookLogUnavailable("DynamoDB is down")
        if entry.id in self.rows:
            existing = self.rows[entry.id]
            return Recorded(False, self.statuses[entry.id], existing.received_at)
        self.rows[entry.id] = entry
        self.statuses[entry.id] = schema.RowStatus.QUEUED
        return Recorded(True)

    def mark_unsent(self, log_id: str, since: float) -> None:
        if self.mark_fails:
            raise RuntimeError("DynamoDB is down")
        self.unsent.append((log_id, since))


@dataclass
class JobStore:
    jobs: dict[str, tuple[JobRequest, Job]] = field(default_factory=dict)
    queued: dict[tuple[str, str], int] = field(default_factory=dict)
    sender_hashes: dict[str, str | None] = field(default_factory=dict)
    unsent: list[tuple[str, float]] = field(default_factory=list)

    def create(
        self,
        job_id: str,
        request: JobRequest,
        now: float,
        tenant_limit: int,
        expires_at: int,
        sender_hash: str | None = None,
    ) -> CreateResult:
        if job_id in self.jobs:
            stored, job = self.jobs[job_id]
            return Duplicate(job, stored.fingerprint)
        counted = (request.lane, request.tenant)
        if self.queued.get(counted, 0) >= tenant_limit:
            return TenantLimited()
        self.queued[counted] = self.queued.get(counted, 0) + 1
        job = Job(
            job_id, request.lane, request.kind, request.tenant, schema.RowStatus.QUEUED, 0, 0, now, now, None, None
        )
        self.jobs[job_id] = (request, job)
        self.sender_hashes[job_id] = sender_hash
        return Created()

    def get(self, job_id: str) -> Job | None:
        found = self.jobs.get(job_id)
        return None if found is None else found[1]

    def mark_unsent(self, job_id: str, at: float) -> None:
        self.unsent.append((job_id, at))


@dataclass
class LaneStates:
    snapshots: dict[str, LaneSnapshot] = field(default_factory=dict)

    def get(self, lane: str) -> LaneSnapshot | None:
        return self.snapshots.get(lane)


@dataclass
class Links:
    linked: dict[str, tuple[str, ...]] = field(default_factory=dict)

    def resolve(self, app_scoped_hash: str) -> tuple[str, ...]:
        return self.linked.get(app_scoped_hash, ())


@dataclass
class Erasures:
    busy: bool = False
    requested: list[tuple[str, str]] = field(default_factory=list)
    linked: list[tuple[str, ...]] = field(default_factory=list)
    statuses: dict[str, dict[str, Any]] = field(default_factory=dict)
    status_reads: int = 0

    def request(self, sender_hash: str, requested_by: str, *, now: float, linked: tuple[str, ...] = ()) -> Requested:
        if self.busy:
            raise ErasuresBusy("2 erasures are already queued")
        self.requested.append((sender_hash, requested_by))
        self.linked.append(linked)
        code = f"{len(self.requested):032x}"
        return Requested(code=code, job_id=erasure.job_id(code), sent=True)

    def status(self, code: str) -> dict[str, Any] | None:
        self.status_reads += 1
        return self.statuses.get(code)


def job_request(**changes: Any) -> dict[str, Any]:
    return {"lane": "bulk", "kind": "import.page", "tenant": "acme", "payload": {"page": 1}, **changes}
