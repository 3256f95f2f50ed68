"""The Meta webhook door (`GET/POST /webhooks/meta`): verify, cap, log, route, enqueue, answer.
The rules are domain/webhook/door.py; this module builds their ports and wires them to Lambda.

With mutual TLS on (WEBHOOK_SETTINGS.client_subject), a request without Meta's client certificate
is answered 403 before anything else: API Gateway verified the chain, the door checks whose it is.

A new delivery costs exactly two AWS calls (the conditional log write, the send); the secret is
cached per instance (adapters/secrets.py). Where the environment watches source accounts
(ACCOUNT_SILENCE), an instance also stamps each account it hears from at most once per
`note_seconds` (adapters/accounts_seen.py): one UpdateItem per account per instance per interval,
about none a delivery amortised. The signature header's form is checked before anything
else, so a request without a well-formed one costs neither a secret read nor a pass over its body.
A well-formed signature that does not match may trigger one early read of the secret, rate-limited
per instance: that is how a rotation is seen before the cache expires.

The log row is the obligation: once it is written and its message sent, or its failed send noted
on the row (which puts it where the sweeper looks), the answer is 200. If the row cannot be
written, or a failed send cannot be noted, the answer is 500 so Meta retries, and a retry of a
queued row is sent again. Never 503: Meta disables subscriptions that keep failing, so only the
route throttle bounds this door.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from aws_lambda_powertools import Logger
from aws_lambda_powertools.metrics import EphemeralMetrics

from pipeline import metric_names, settings
from pipeline.adapters.accounts_seen import AccountsSeen
from pipeline.adapters.clients import DOOR, Clients
from pipeline.adapters.lane_queue import QueueSender
from pipeline.adapters.observability import logger_for, metrics_for
from pipeline.adapters.secrets import MetaSecretSource
from pipeline.adapters.sender_key import SenderKey
from pipeline.adapters.webhook_log import WebhookLog
from pipeline.domain.webhook import routing
from pipeline.domain.webhook.door import WebhookDoor, WebhookDoorPorts, WebhookDoorRules
from pipeline.handlers.http_door import Failures, Handler, entry_point, http_handler
from pipeline.metric_names import WebhookFailure

SERVICE = "ingress"
FAILURES = Failures(metric_names.WEBHOOK_FAILED, WebhookFailure.INTERNAL, "webhook request failed")


@dataclass(frozen=True)
class IngressConfig:
    webhook: settings.WebhookSettings
    queue_urls: Mapping[str, str]
    retention: settings.RetentionSettings

    @classmethod
    def from_environ(cls, environ: Mapping[str, str]) -> IngressConfig:
        config = cls(
            webhook=settings.webhook(environ),
            queue_urls=settings.lane_queues(environ),
            retention=settings.retention(environ),
        )
        missing = sorted(routing.WEBHOOK_LANES - set(config.queue_urls))
        if missing:
            raise settings.SettingsError(f"{settings.EnvVar.LANE_QUEUES} lacks webhook lanes: {', '.join(missing)}")
        return config


def build_handler(
    config: IngressConfig,
    ports: WebhookDoorPorts,
    logger: Logger,
    metrics: EphemeralMetrics,
    clock: Callable[[], float] = time.time,
) -> Handler:
    rules = WebhookDoorRules(
        max_body_bytes=config.webhook.max_body_bytes,
        max_json_depth=config.webhook.max_json_depth,
        queue_urls=config.queue_urls,
        raw_deliveries_seconds=config.retention.raw_deliveries_seconds,
        client_subject=config.webhook.client_subject,
    )
    return http_handler(
        lambda request, telemetry: WebhookDoor(rules, ports, telemetry, clock).answer(request),
        logger,
        metrics,
        FAILURES,
    )


def create_handler(
    environ: Mapping[str, str], *, clients: Clients | None = None, clock: Callable[[], float] = time.time
) -> Handler:
    """The handler for one instance, from the variables the template gives the function. No AWS
    call is made here: the secret is read on the first request that needs it."""
    config = IngressConfig.from_environ(environ)
    tables = settings.Tables.from_environ(environ)
    clients = clients or Clients(
        region=settings.region(environ), credentials=settings.credentials(environ), budget=DOOR
    )
    silence = settings.account_silence(environ)
    ports = WebhookDoorPorts(
        secrets=MetaSecretSource(
            clients.secretsmanager,
            settings.require(environ, settings.EnvVar.META_SECRET_ARN),
            clock,
            cache_seconds=config.webhook.secret_cache_seconds,
            refresh_seconds=config.webhook.secret_refresh_seconds,
        ),
        log=WebhookLog(clients.dynamodb, tables.webhook_log),
        queue=QueueSender(clients.sqs),
        senders=SenderKey(clients.secretsmanager, settings.require(environ, settings.EnvVar.SENDER_KEY_ARN)),
        accounts=None
        if silence is None
        else AccountsSeen(clients.dynamodb, settings.require(environ, settings.EnvVar.ACCOUNTS_TABLE), silence),
    )
    return build_handler(config, ports, logger_for(environ, SERVICE), metrics_for(environ, SERVICE), clock)


handler = entry_point(create_handler)
