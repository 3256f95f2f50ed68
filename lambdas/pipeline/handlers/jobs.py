"""The jobs API (`POST /jobs`, `GET /jobs/{id}`), IAM-authorised at API Gateway.

Every request is bound to its caller's IAM identity: the environment's config grants each
principal the tenants it may act for (domain/callers.py). A caller with no grant is refused 403
on both routes; `POST` for a tenant it is not granted is refused 403 before admission is asked or
anything is written, and `GET` of another tenant's job is refused 403 without its status.

`POST` validates, asks admission (cached lane state: no AWS call at steady state) whether the lane
can start the job within its objective (503 + Retry-After if not), then writes the job and counts
it against its tenant in one transaction (429 at the tenant's limit; an `Idempotency-Key` seen
before returns the job it made), then enqueues it. As with the webhook log, the row is the
obligation: a failed send still answers 202 and the sweeper replays the row.
"""

from __future__ import annotations

import functools
import os
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from aws_lambda_powertools import Logger
from aws_lambda_powertools.metrics import EphemeralMetrics

from pipeline import metric_names, schema, settings
from pipeline.adapters.api_telemetry import CORRELATION_ID, RequestTelemetry
from pipeline.adapters.clients import Clients
from pipeline.adapters.jobs_table import (
    Created,
    CreateResult,
    Duplicate,
    JobsTable,
    JobsTableUnavailable,
    TenantLimited,
)
from pipeline.adapters.lane_state import CachedLaneState, LaneStateReader
from pipeline.adapters.observability import logger_for, metrics_for
from pipeline.adapters.queues import Outgoing, QueueSender
from pipeline.adapters.sender_key import SenderKey, SenderKeyUnavailable
from pipeline.domain import admission, http, jobs, retention, senders
from pipeline.domain.admission import LaneProfile, LaneSnapshot
from pipeline.domain.callers import principal_of
from pipeline.domain.envelope import Envelope
from pipeline.domain.http import HttpRequest
from pipeline.domain.jobs import Job, JobRequest
from pipeline.domain.ports import SenderHasher
from pipeline.settings import RetentionSettings

SERVICE = "jobs"
IDEMPOTENCY_HEADER = "idempotency-key"
Handler = Callable[[Mapping[str, Any], Any], dict[str, Any]]


class JobStore(Protocol):
    def create(
        self,
        job_id: str,
        request: JobRequest,
        now: float,
        tenant_limit: int,
        expires_at: int,
        sender_hash: str | None = None,
    ) -> CreateResult: ...

    def get(self, job_id: str) -> Job | None: ...


class LaneStates(Protocol):
    def get(self, lane: str) -> LaneSnapshot | None: ...


class Sender(Protocol):
    def send(self, queue_url: str, message: Outgoing) -> str: ...


@dataclass(frozen=True)
class JobsPorts:
    store: JobStore
    lanes: LaneStates
    queue: Sender
    senders: SenderHasher


@dataclass(frozen=True)
class JobsApiSettings:
    settings: settings.JobsSettings
    queue_urls: Mapping[str, str]
    profiles: Mapping[str, LaneProfile]
    retention: RetentionSettings

    @property
    def max_body_bytes(self) -> int:
        # The payload limit applies to its compact form; a pretty-printed body is larger on the
        # wire, so the body cap leaves it room and the payload is measured after parsing.
        return 2 * self.settings.max_payload_bytes + 4096

    @classmethod
    def from_environ(cls, environ: Mapping[str, str]) -> JobsApiSettings:
        lanes = settings.lanes(environ)
        queue_urls = settings.lane_queues(environ)
        jobs_settings = settings.jobs(environ)
        missing = sorted(set(lanes) - set(queue_urls))
        if missing:
            raise settings.SettingsError(f"{settings.EnvVar.LANE_QUEUES} lacks lanes: {', '.join(missing)}")
        profiles = {
            name: LaneProfile(
                name=name,
                objective_seconds=lane.objective_seconds,
                slots=lane.max_concurrency * lane.batch_size,
                capacity_per_second=lane.capacity_per_second,
            )
            for name, lane in lanes.items()
        }
        return cls(
            settings=jobs_settings, queue_urls=queue_urls, profiles=profiles, retention=settings.retention(environ)
        )


def _job_id_from(request: HttpRequest) -> str:
    job_id = request.path_parameters.get("id")
    if job_id is None and "/jobs/" in request.path:
        job_id = request.path.rsplit("/jobs/", 1)[1]
    return job_id or ""


class _Api:
    def __init__(
        self, config: JobsApiSettings, ports: JobsPorts, telemetry: RequestTelemetry, clock: Callable[[], float]
    ) -> None:
        self._config = config
        self._ports = ports
        self._telemetry = telemetry
        self._clock = clock

    def answer(self, request: HttpRequest) -> dict[str, Any]:
        if request.method not in ("GET", "POST"):
            return http.error(405, "method not allowed", headers={"allow": "GET, POST"})
        if not self._config.settings.callers.tenants_of(request.caller):
            return self._forbidden(request, f"{principal_of(request.caller)} is not granted any tenant on this API")
        if request.method == "POST":
            return self._create(request)
        return self._status(request)

    def _forbidden(self, request: HttpRequest, message: str, **fields: Any) -> dict[str, Any]:
        self._telemetry.warning("caller refused", outcome="forbidden", caller=principal_of(request.caller), **fields)
        self._telemetry.count(metric_names.JOB_FORBIDDEN)
        return http.error(403, message)

    def _status(self, request: HttpRequest) -> dict[str, Any]:
        job_id = _job_id_from(request)
        # An id this API could not have issued is unknown without asking DynamoDB.
        job = self._ports.store.get(job_id) if jobs.is_job_id(job_id) else None
        if job is None:
            return http.error(404, "unknown job")
        if not self._config.settings.callers.may_act_for(request.caller, job.tenant):
            # The job's tenant is not named: the caller may not know it.
            return self._forbidden(
                request,
                f"{principal_of(request.caller)} may not read this job: it belongs to a tenant not granted to it",
                id=job_id,
            )
        return http.json_response(200, job.to_public())

    def _create(self, request: HttpRequest) -> dict[str, Any]:
        now = self._clock()
        try:
            raw = request.body_bytes(self._config.max_body_bytes)
            job_request = jobs.parse_request(
                raw,
                request.headers.get(IDEMPOTENCY_HEADER),
                lanes=self._config.profiles.keys(),
                max_payload_bytes=self._config.settings.max_payload_bytes,
                now=now,
            )
        except http.BodyTooLarge as exc:
            return http.error(413, str(exc))
        except (http.BodyUndecodable, jobs.InvalidJob) as exc:
            return http.error(getattr(exc, "status", 400), str(exc))
        if not self._config.settings.callers.may_act_for(request.caller, job_request.tenant):
            return self._forbidden(
                request,
                f"{principal_of(request.caller)} may not submit jobs for tenant {job_request.tenant}",
                tenant=job_request.tenant,
            )
        lane = job_request.lane
        profile = self._config.profiles[lane]
        decision = admission.decide(self._ports.lanes.get(lane), profile)
        fields = {"lane": lane, "tenant": job_request.tenant, "kind": job_request.kind}
        if not decision.admitted:
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
        job_id = jobs.job_id(job_request.tenant, job_request.idempotency_key)
        telemetry = self._telemetry.bind(**{CORRELATION_ID: job_id})
        expires_at = retention.expiry(now, self._config.retention.jobs_seconds, not_before=job_request.deadline)
        person = senders.person_in_job(job_request.payload)
        sender_hash = None if person is None else self._ports.senders.hash(person)
        result = self._ports.store.create(
            job_id, job_request, now, self._config.settings.tenant_queued_limit, expires_at, sender_hash
        )
        if isinstance(result, TenantLimited):
            telemetry.info("tenant at its queued-job limit", outcome="tenant_limited", **fields)
            telemetry.count(metric_names.JOB_TENANT_LIMITED, **{metric_names.LANE: lane})
            limit = self._config.settings.tenant_queued_limit
            return http.error(429, f"tenant {job_request.tenant} already has {limit} queued jobs on lane {lane}")
        if isinstance(result, Duplicate):
            return self._replay(telemetry, job_id, job_request, result)
        assert isinstance(result, Created)
        self._enqueue(telemetry, jobs.envelope(job_id, job_request, now), fields)
        return http.json_response(
            202, {"id": job_id, "status": schema.RowStatus.QUEUED}, headers={"location": f"/jobs/{job_id}"}
        )

    def _replay(
        self, telemetry: RequestTelemetry, job_id: str, job_request: JobRequest, result: Duplicate
    ) -> dict[str, Any]:
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

    def _enqueue(self, telemetry: RequestTelemetry, envelope: Envelope, fields: dict[str, str]) -> None:
        try:
            self._ports.queue.send(self._config.queue_urls[envelope.lane], Outgoing(envelope))
        except Exception:  # any failure here: the row is written, so the job is safe
            telemetry.exception(
                "enqueue failed after the job was written; the sweeper will replay it",
                outcome="enqueue_failed",
                **fields,
            )
            telemetry.count(metric_names.ENQUEUE_FAILED, **{metric_names.LANE: envelope.lane})
            return
        telemetry.count(metric_names.JOB_ACCEPTED, **{metric_names.LANE: envelope.lane})
        telemetry.info("job accepted", outcome="accepted", **fields)


def build_handler(
    config: JobsApiSettings,
    ports: JobsPorts,
    logger: Logger,
    metrics: EphemeralMetrics,
    clock: Callable[[], float] = time.time,
) -> Handler:
    def handle(event: Mapping[str, Any], context: Any) -> dict[str, Any]:
        request = HttpRequest.from_event(event)
        telemetry = RequestTelemetry(
            logger, metrics, request_id=getattr(context, "aws_request_id", None) or request.request_id
        )
        try:
            return _Api(config, ports, telemetry, clock).answer(request)
        except JobsTableUnavailable:
            telemetry.exception("jobs table unavailable")
            telemetry.count(metric_names.JOB_FAILED, **{metric_names.REASON: metric_names.JobFailure.TABLE_UNAVAILABLE})
            return http.error(500, "internal error")
        except SenderKeyUnavailable as exc:
            # Written unindexed, the job could not be found by an erasure request: refuse it.
            telemetry.error("cannot read the sender key", error=str(exc))
            telemetry.count(
                metric_names.JOB_FAILED, **{metric_names.REASON: metric_names.JobFailure.SECRETS_UNAVAILABLE}
            )
            return http.error(500, "internal error")
        except Exception:
            telemetry.exception("jobs request failed")
            telemetry.count(metric_names.JOB_FAILED, **{metric_names.REASON: metric_names.JobFailure.INTERNAL})
            return http.error(500, "internal error")

    return handle


def create_handler(
    environ: Mapping[str, str], *, clients: Clients | None = None, clock: Callable[[], float] = time.time
) -> Handler:
    """The handler for one instance, from the variables the template gives the function. No AWS
    call is made here: lane state is read on the first job for each lane."""
    config = JobsApiSettings.from_environ(environ)
    tables = settings.Tables.from_environ(environ)
    clients = clients or Clients(region=settings.region(environ))
    logger = logger_for(environ, SERVICE)

    def lane_state_failed(lane: str, exc: Exception) -> None:
        logger.warning("lane state unreadable; admitting without it", extra={"lane": lane, "error": str(exc)})

    ports = JobsPorts(
        store=JobsTable(clients.dynamodb, tables.jobs, tables.state),
        lanes=CachedLaneState(
            LaneStateReader(clients.sqs, clients.dynamodb, tables.state, config.queue_urls),
            ttl_seconds=config.settings.admission_cache_seconds,
            clock=clock,
            on_error=lane_state_failed,
        ),
        queue=QueueSender(clients.sqs),
        senders=SenderKey(clients.secretsmanager, settings.require(environ, settings.EnvVar.SENDER_KEY_ARN)),
    )
    return build_handler(config, ports, logger, metrics_for(environ, SERVICE), clock)


@functools.cache
def _default_handler() -> Handler:
    return create_handler(os.environ)


def handler(event: Mapping[str, Any], context: Any) -> dict[str, Any]:
    return _default_handler()(event, context)
