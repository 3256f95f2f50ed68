"""The jobs API (`POST /jobs`, `GET /jobs/{id}`), IAM-authorised at API Gateway. The rules are
domain/jobs/api.py; this module reads the function's settings, builds the ports and wires them.

Every request is bound to its caller's IAM identity: the environment's config grants each
principal the tenants it may act for (settings/callers.py), which the function reads from their
secret at its cold start (adapters/jobs_callers.py). A caller with no grant is refused 403
on both routes; `POST` for a tenant it is not granted is refused 403 before admission is asked or
anything is written, and `GET` of another tenant's job is refused 403 without its status. A
payload's `reply_to` must have Meta's id shapes (400 `reply_to_malformed`) and send from an asset the
job's tenant owns (TENANT_ASSETS, settings/tenant_assets.py; 403 `reply_asset_not_bound`), checked
before admission or any write.

`POST` validates, asks admission (cached lane state: no AWS call at steady state) whether the lane
can start the job within its objective (503 + Retry-After if not), then writes the job and counts
it against its tenant in one transaction (429 at the tenant's limit; an `Idempotency-Key` seen
before returns the job it made), then enqueues it. As with the webhook log, the row is the
obligation: a failed send still answers 202 and the sweeper replays the row.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace

from aws_lambda_powertools import Logger
from aws_lambda_powertools.metrics import EphemeralMetrics

from pipeline import metric_names, settings
from pipeline.adapters.clients import DOOR, Clients
from pipeline.adapters.jobs_callers import read_callers
from pipeline.adapters.jobs_table import JobsTable
from pipeline.adapters.lane_queue import QueueSender
from pipeline.adapters.lane_views import CachedLaneState, LaneStateReader
from pipeline.adapters.observability import logger_for, metrics_for
from pipeline.adapters.sender_key import SenderKey
from pipeline.domain.jobs.admission import LaneProfile
from pipeline.domain.jobs.api import JobsApi, JobsApiPorts, JobsApiRules
from pipeline.domain.jobs.requests import JobsTableUnavailable
from pipeline.handlers.http_door import Failures, Handler, entry_point, http_handler
from pipeline.metric_names import JobFailure
from pipeline.settings import RetentionSettings
from pipeline.settings.tenant_assets import AssetBinding

SERVICE = "jobs"
FAILURES = Failures(
    metric_names.JOB_FAILED,
    JobFailure.INTERNAL,
    "jobs request failed",
    {JobsTableUnavailable: (JobFailure.TABLE_UNAVAILABLE, "jobs table unavailable")},
)


@dataclass(frozen=True)
class JobsApiSettings:
    settings: settings.JobsSettings
    queue_urls: Mapping[str, str]
    profiles: Mapping[str, LaneProfile]
    retention: RetentionSettings
    assets: AssetBinding

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
                slots=lane.slots,
                capacity_per_second=lane.capacity_per_second,
            )
            for name, lane in lanes.items()
        }
        return cls(
            settings=jobs_settings,
            queue_urls=queue_urls,
            profiles=profiles,
            retention=settings.retention(environ),
            assets=settings.asset_binding(environ),
        )


def build_handler(
    config: JobsApiSettings,
    ports: JobsApiPorts,
    logger: Logger,
    metrics: EphemeralMetrics,
    clock: Callable[[], float] = time.time,
) -> Handler:
    rules = JobsApiRules(
        callers=config.settings.grants,
        profiles=config.profiles,
        queue_urls=config.queue_urls,
        max_body_bytes=config.max_body_bytes,
        max_payload_bytes=config.settings.max_payload_bytes,
        tenant_queued_limit=config.settings.tenant_queued_limit,
        jobs_seconds=config.retention.jobs_seconds,
        assets=config.assets,
    )
    return http_handler(
        lambda request, telemetry: JobsApi(rules, ports, telemetry, clock).answer(request),
        logger,
        metrics,
        FAILURES,
    )


def create_handler(
    environ: Mapping[str, str], *, clients: Clients | None = None, clock: Callable[[], float] = time.time
) -> Handler:
    """The handler for one instance, from the variables the template gives the function. The one
    AWS call made here reads the callers; lane state is read on the first job for each lane."""
    config = JobsApiSettings.from_environ(environ)
    tables = settings.Tables.from_environ(environ)
    clients = clients or Clients(
        region=settings.region(environ), credentials=settings.credentials(environ), budget=DOOR
    )
    callers = read_callers(clients.secretsmanager, settings.require(environ, settings.EnvVar.JOBS_CALLERS_ARN))
    config = replace(config, settings=replace(config.settings, callers=callers))
    logger = logger_for(environ, SERVICE)

    def lane_state_failed(lane: str, exc: Exception) -> None:
        logger.warning("lane state unreadable; admitting without it", extra={"lane": lane, "error": str(exc)})

    ports = JobsApiPorts(
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


handler = entry_point(create_handler)
