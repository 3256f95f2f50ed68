"""The jobs API's rules (`POST /jobs`, `GET /jobs/{id}`): callers, validation, admission and
shedding, the tenant's limit, idempotent replay, enqueue. handlers/jobs.py wires them to AWS; the
contract is the handler's docstring.

Every 500 is raised (`http.Failed` with its reason, or the store's JobsTableUnavailable) for the
handler to answer and count, the same way as for a bug.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from pipeline import metric_names, schema
from pipeline.domain import http, retention, senders
from pipeline.domain.envelope import Envelope, Outgoing
from pipeline.domain.http import HttpRequest, Reply
from pipeline.domain.jobs import admission
from pipeline.domain.jobs import requests as jobs
from pipeline.domain.jobs.admission import LaneProfile
from pipeline.domain.jobs.ports import JobStore, LaneStates
from pipeline.domain.jobs.requests import Created, Duplicate, JobRequest, TenantLimited
from pipeline.domain.ports import CORRELATION_ID, Sender, SenderHasher, Telemetry
from pipeline.domain.reply_to import REPLY_ASSET_NOT_BOUND, ReplyTo, ReplyToRefused
from pipeline.domain.senders import SenderKeyUnavailable
from pipeline.metric_names import JobFailure
from pipeline.settings.callers import Callers, principal_of
from pipeline.settings.tenant_assets import AssetBinding

IDEMPOTENCY_HEADER = "idempotency-key"


@dataclass(frozen=True)
class JobsApiPorts:
    store: JobStore
    lanes: LaneStates
    queue: Sender
    senders: SenderHasher


@dataclass(frozen=True)
class JobsApiRules:
    callers: Callers
    profiles: Mapping[str, LaneProfile]
    """What admission knows of each lane; its keys are the lanes a job may name."""
    queue_urls: Mapping[str, str]
    max_body_bytes: int
    max_payload_bytes: int
    tenant_queued_limit: int
    jobs_seconds: int
    """How long a job's row is kept, from its deadline when that is later (domain/retention.py)."""
    assets: AssetBinding = field(default_factory=AssetBinding)
    """Which Meta assets each tenant owns: a job may name only its own tenant's in `reply_to`."""


def job_id_from(request: HttpRequest) -> str:
    job_id = request.path_parameters.get("id")
    if job_id is None and "/jobs/" in request.path:
        job_id = request.path.rsplit("/jobs/", 1)[1]
    return job_id or ""


class JobsApi:
    """One request's answer; made per request, so nothing of one request reaches the next."""

    def __init__(
        self, rules: JobsApiRules, ports: JobsApiPorts, telemetry: Telemetry, clock: Callable[[], float]
    ) -> None:
        self._rules = rules
        self._ports = ports
        self._telemetry = telemetry
        self._clock = clock

    def answer(self, request: HttpRequest) -> Reply:
        if request.method not in ("GET", "POST"):
            return http.error(405, "method not allowed", headers={"allow": "GET, POST"})
        if not self._rules.callers.tenants_of(request.caller):
            return self._forbidden(request, f"{principal_of(request.caller)} is not granted any tenant on this API")
        if request.method == "POST":
            return self._create(request)
        return self._status(request)

    def _forbidden(self, request: HttpRequest, message: str, **fields: Any) -> Reply:
        self._telemetry.warning("caller refused", outcome="forbidden", caller=principal_of(request.caller), **fields)
        self._telemetry.count(metric_names.JOB_FORBIDDEN)
        return http.error(403, message)

    def _status(self, request: HttpRequest) -> Reply:
        job_id = job_id_from(request)
        # An id this API could not have issued is unknown without asking DynamoDB.
        job = self._ports.store.get(job_id) if jobs.is_job_id(job_id) else None
        if job is None:
            return http.error(404, "unknown job")
        if not self._rules.callers.may_act_for(request.caller, job.tenant):
            # The job's tenant is not named: the caller may not know it.
            return self._forbidden(
                request,
                f"{principal_of(request.caller)} may not read this job: it belongs to a tenant not granted to it",
                id=job_id,
            )
        return http.json_response(200, job.to_public())

    def _create(self, request: HttpRequest) -> Reply:
        now = self._clock()
        try:
            raw = request.body_bytes(self._rules.max_body_bytes)
            job_request = jobs.parse_request(
                raw,
                request.headers.get(IDEMPOTENCY_HEADER),
                lanes=self._rules.profiles.keys(),
                max_payload_bytes=self._rules.max_payload_bytes,
                now=now,
            )
        except http.BodyTooLarge as exc:
            return http.error(413, str(exc))
        except (http.BodyUndecodable, jobs.InvalidJob) as exc:
            return http.error(getattr(exc, "status", 400), str(exc))
        if not self._rules.callers.may_act_for(request.caller, job_request.tenant):
            return self._forbidden(
                request,
                f"{principal_of(request.caller)} may not submit jobs for tenant {job_request.tenant}",
                tenant=job_request.tenant,
            )
        lane = job_request.lane
        fields = {"lane": lane, "tenant": job_request.tenant, "kind": job_request.kind}
        refused = self._refuse_reply_to(request, job_request, fields)
        if refused is not None:
            return refused
        shed = self._shed(lane, fields)
        if shed is not None:
            return shed
        job_id = jobs.job_id(job_request.tenant, job_request.idempotency_key)
        telemetry = self._telemetry.bind(**{CORRELATION_ID: job_id})
        expires_at = retention.expiry(now, self._rules.jobs_seconds, not_before=job_request.deadline)
        result = self._ports.store.create(
            job_id, job_request, now, self._rules.tenant_queued_limit, expires_at, self._sender_hash(job_request)
        )
        if isinstance(result, TenantLimited):
            telemetry.info("tenant at its queued-job limit", outcome="tenant_limited", **fields)
            telemetry.count(metric_names.JOB_TENANT_LIMITED, **{metric_names.LANE: lane})
            limit = self._rules.tenant_queued_limit
            return http.error(429, f"tenant {job_request.tenant} already has {limit} queued jobs on lane {lane}")
        if isinstance(result, Duplicate):
            return self._replay(telemetry, job_id, job_request, result)
        assert isinstance(result, Created)
        self._enqueue(telemetry, jobs.envelope(job_id, job_request, now), fields)
        return http.json_response(
            202, {"id": job_id, "status": schema.RowStatus.QUEUED}, headers={"location": f"/jobs/{job_id}"}
        )

    def _refuse_reply_to(self, request: HttpRequest, job: JobRequest, fields: Mapping[str, str]) -> Reply | None:
        """A payload's `reply_to` (any kind: a `reply.send` could be posted directly) must have
        Meta's shapes (400) and name a sender the job's tenant owns (403), before anything is
        asked or written. The consumer checks both again before it sends (tasks/replies.py)."""
        raw = job.payload.get("reply_to") if isinstance(job.payload, dict) else None
        if raw is None:
            return None
        try:
            ReplyTo.parse(raw).check_bound(job.tenant, self._rules.assets)
        except ReplyToRefused as exc:
            if exc.reason != REPLY_ASSET_NOT_BOUND:
                return http.error(400, f"{exc.reason}: {exc}")
            return self._forbidden(request, f"{exc.reason}: {exc}", reason=exc.reason, **fields)
        return None

    def _shed(self, lane: str, fields: Mapping[str, str]) -> Reply | None:
        """The 503 when the lane cannot start the job within its objective; None to admit it."""
        profile = self._rules.profiles[lane]
        decision = admission.decide(self._ports.lanes.get(lane), profile)
        if decision.admitted:
            return None
        self._telemetry.info(
            "job shed",
            outcome="shed",
            predicted_wait_seconds=round(decision.predicted_wait_seconds, 1),
            drain_rate=round(decision.drain_rate, 2),
            **fields,
        )
        self._telemetry.count(metric_names.JOB_SHED, **{metric_names.LANE: lane})
        retry_after = str(decision.retry_after_seconds)
        message = (
            f"lane {lane} cannot start new work within its {profile.objective_seconds:g} s objective; "
            f"retry after {retry_after} s"
        )
        return http.error(503, message, headers={"retry-after": retry_after})

    def _sender_hash(self, job_request: JobRequest) -> str | None:
        person = senders.person_in_job(job_request.payload)
        try:
            return None if person is None else self._ports.senders.hash(person)
        except SenderKeyUnavailable as exc:
            # Written unindexed, the job could not be found by an erasure request: refuse it.
            self._telemetry.error("cannot read the sender key", error=str(exc))
            raise http.Failed(JobFailure.SECRETS_UNAVAILABLE) from exc

    def _replay(self, telemetry: Telemetry, job_id: str, job_request: JobRequest, result: Duplicate) -> Reply:
        if result.request_hash is not None and result.request_hash != job_request.fingerprint:
            telemetry.warning("idempotency key reused for a different request", outcome="key_conflict")
            return http.error(422, "Idempotency-Key was already used for a different job (lane, kind or payload)")
        # No second message: the first was sent, or its row is pending and the sweeper replays it.
        telemetry.info("duplicate job request", outcome="duplicate", lane=job_request.lane)
        telemetry.count(metric_names.JOB_DUPLICATE, **{metric_names.LANE: job_request.lane})
        status = result.job.status if result.job is not None else schema.RowStatus.QUEUED
        return http.json_response(
            202, {"id": job_id, "status": status, "duplicate": True}, headers={"location": f"/jobs/{job_id}"}
        )

    def _note_unsent(self, telemetry: Telemetry, envelope: Envelope, fields: Mapping[str, str]) -> None:
        try:
            self._ports.store.mark_unsent(envelope.id, envelope.created_at)
        except Exception:
            # Still 202: the row is in the pending index from its creation, so the sweeper replays
            # it anyway, only later (once a busy lane's patience has run out).
            telemetry.exception("job not marked unsent; the sweeper will replay it late", **fields)

    def _enqueue(self, telemetry: Telemetry, envelope: Envelope, fields: Mapping[str, str]) -> None:
        try:
            self._ports.queue.send(self._rules.queue_urls[envelope.lane], Outgoing(envelope))
        except Exception:  # any failure here: the row is written, so the job is safe
            telemetry.exception(
                "enqueue failed after the job was written; the sweeper will replay it",
                outcome="enqueue_failed",
                **fields,
            )
            telemetry.count(metric_names.ENQUEUE_FAILED, **{metric_names.LANE: envelope.lane})
            self._note_unsent(telemetry, envelope, fields)
            return
        telemetry.count(metric_names.JOB_ACCEPTED, **{metric_names.LANE: envelope.lane})
        telemetry.info("job accepted", outcome="accepted", **fields)
