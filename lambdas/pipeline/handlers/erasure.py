"""Meta's data-deletion callback (`POST /meta/data-deletion`) and the status of an erasure
(`GET /meta/data-deletion/{code}`). The rules are domain/erasure/callback.py; this module builds
their ports and wires them.

Meta calls the callback when a person removes the app or asks for their data to be deleted, with a
`signed_request` (domain/erasure/signed_request.py). A request whose signature is missing or malformed is
401, one no app secret in force signed is 403, and nothing is written or sent for either. A signed
one becomes an erasure job (adapters/erasure_requests.py) naming the person only by their hash,
and the answer is what Meta asks for: `{"url": <status page>, "confirmation_code": <code>}`. Meta
shows both to the person. The erasure itself runs on its lane (tasks/erase.py).

The status page needs no credential but the code: 128 random bits, from which the job's id is
derived (the row does not hold the code, and no table does: it is derived under the sender key
from a nonce, adapters/open_erasures.py). It shows pending, done, no data held or failed, and when.

A `signed_request` issued more than `max_request_age_seconds` ago is refused 403 (a replay), and
a request for a person whose erasure is pending answers that erasure's code, making no job. Meta's
`user_id` is app-scoped: the erasure takes it and every id the product linked to it
(adapters/identity_links.py).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping

from aws_lambda_powertools import Logger
from aws_lambda_powertools.metrics import EphemeralMetrics

from pipeline import metric_names, settings
from pipeline.adapters.clients import DOOR, Clients
from pipeline.adapters.erasure_requests import ErasureRequests
from pipeline.adapters.identity_links import IdentityLinks
from pipeline.adapters.jobs_table import JobsTable
from pipeline.adapters.lane_queue import QueueSender
from pipeline.adapters.observability import logger_for, metrics_for
from pipeline.adapters.open_erasures import OpenErasures
from pipeline.adapters.secrets import MetaSecretSource
from pipeline.adapters.sender_key import SenderKey
from pipeline.domain.erasure.callback import ErasureCallback, ErasureCallbackPorts
from pipeline.domain.jobs.requests import JobsTableUnavailable
from pipeline.handlers.http_door import Failures, Handler, entry_point, http_handler
from pipeline.metric_names import ErasureFailure

SERVICE = "erasure"
FAILURES = Failures(
    metric_names.ERASURE_FAILED,
    ErasureFailure.INTERNAL,
    "erasure request failed",
    {JobsTableUnavailable: (ErasureFailure.TABLE_UNAVAILABLE, "jobs table unavailable")},
)


def build_handler(
    config: settings.ErasureSettings,
    ports: ErasureCallbackPorts,
    logger: Logger,
    metrics: EphemeralMetrics,
    clock: Callable[[], float] = time.time,
) -> Handler:
    return http_handler(
        lambda request, telemetry: ErasureCallback(
            config.max_body_bytes, ports, telemetry, clock, max_age_seconds=config.max_request_age_seconds
        ).answer(request),
        logger,
        metrics,
        FAILURES,
    )


def create_handler(
    environ: Mapping[str, str], *, clients: Clients | None = None, clock: Callable[[], float] = time.time
) -> Handler:
    """The handler for one instance, from the variables the template gives the function. No AWS
    call is made here: the secrets are read on the first request that needs them."""
    config = settings.erasure(environ)
    kept = settings.retention(environ)
    queue_urls = settings.lane_queues(environ)
    if config.lane not in queue_urls:
        raise settings.SettingsError(f"{settings.EnvVar.LANE_QUEUES} lacks the erasure lane {config.lane}")
    tables = settings.Tables.from_environ(environ)
    clients = clients or Clients(
        region=settings.region(environ), credentials=settings.credentials(environ), budget=DOOR
    )
    sender_key = SenderKey(clients.secretsmanager, settings.require(environ, settings.EnvVar.SENDER_KEY_ARN))
    ports = ErasureCallbackPorts(
        secrets=MetaSecretSource(
            clients.secretsmanager,
            settings.require(environ, settings.EnvVar.META_SECRET_ARN),
            clock,
            cache_seconds=config.secret_cache_seconds,
            refresh_seconds=config.secret_refresh_seconds,
        ),
        senders=sender_key,
        requests=ErasureRequests(
            JobsTable(clients.dynamodb, tables.jobs, tables.state),
            QueueSender(clients.sqs),
            queue_urls[config.lane],
            open_erasures=OpenErasures(clients.dynamodb, tables.state),
            code_key=sender_key.key,
            queued_limit=config.queued_limit,
            deadline_seconds=config.deadline_seconds,
            keep_seconds=kept.erasure_requests_seconds,
        ),
        links=IdentityLinks(clients.dynamodb, tables.state),
    )
    return build_handler(config, ports, logger_for(environ, SERVICE), metrics_for(environ, SERVICE), clock)


handler = entry_point(create_handler)
