"""The Meta webhook door (`GET/POST /webhooks/meta`): verify, cap, log, route, enqueue, answer.

A new delivery costs exactly two AWS calls (the conditional log write, the send); the secret is
cached per instance (adapters/secrets.py). The signature header's form is checked before anything
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
from pipeline.adapters.observability import logger_for, metrics_for
from pipeline.adapters.queues import Outgoing, QueueSender
from pipeline.adapters.secrets import MetaSecrets, MetaSecretSource, SecretsMisconfigured, SecretsUnavailable
from pipeline.adapters.sender_key import SenderKey, SenderKeyUnavailable
from pipeline.adapters.webhook_log import LogEntry, Recorded, WebhookLog, WebhookLogUnavailable
from pipeline.domain import http, retention, routing, senders, signature, webhook, webhook_body
from pipeline.domain.envelope import Envelope
from pipeline.domain.http import HttpRequest
from pipeline.domain.ports import SenderHasher
from pipeline.domain.signature import SignatureCheck
from pipeline.metric_names import WebhookFailure

SERVICE = "ingress"
Handler = Callable[[Mapping[str, Any], Any], dict[str, Any]]


def _ok() -> dict[str, Any]:
    return http.response(200, "ok")


def _failed() -> dict[str, Any]:
    return http.error(500, "internal error")


class SecretSource(Protocol):
    def get(self) -> MetaSecrets: ...

    def refresh(self) -> MetaSecrets | None: ...


class DeliveryLog(Protocol):
    def record(self, entry: LogEntry) -> Recorded: ...

    def mark_unsent(self, log_id: str, since: float) -> None: ...


class Sender(Protocol):
    def send(self, queue_url: str, message: Outgoing) -> str: ...


@dataclass(frozen=True)
class IngressPorts:
    """The door's dependencies; the benchmark swaps them for stubs to time the code alone."""

    secrets: SecretSource
    log: DeliveryLog
    queue: Sender
    senders: SenderHasher
    """The key the one person a delivery names is indexed by (read once per instance)."""


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
        if config.webhook.max_body_bytes > webhook_body.MAX_LOGGABLE_BYTES:
            raise settings.SettingsError(
                f"max_body_bytes {config.webhook.max_body_bytes} exceeds what the webhook log can hold "
                f"({webhook_body.MAX_LOGGABLE_BYTES}); a delivery could be accepted and never stored"
            )
        return config


class _Door:
    def __init__(
        self, config: IngressConfig, ports: IngressPorts, telemetry: RequestTelemetry, clock: Callable[[], float]
    ):
        self._config = config
        self._ports = ports
        self._telemetry = telemetry
        self._clock = clock

    def answer(self, request: HttpRequest) -> dict[str, Any]:
        if request.method == "POST":
            return self._deliver(request)
        if request.method == "GET":
            return self._handshake(request)
        return http.error(405, "method not allowed", headers={"allow": "GET, POST"})

    def _secrets(self) -> MetaSecrets | None:
        try:
            return self._ports.secrets.get()
        except SecretsMisconfigured as exc:
            self._telemetry.critical(
                "the Meta secret is unusable; every webhook fails until it is fixed", error=str(exc)
            )
            self._telemetry.count(metric_names.WEBHOOK_FAILED, **{metric_names.REASON: WebhookFailure.MISCONFIGURED})
        except SecretsUnavailable as exc:
            self._telemetry.error("cannot read the Meta secret", error=str(exc))
            self._telemetry.count(
                metric_names.WEBHOOK_FAILED, **{metric_names.REASON: WebhookFailure.SECRETS_UNAVAILABLE}
            )
        return None

    def _reject(self, status: int, reason: str, message: str, *, signature_refused: bool = False) -> dict[str, Any]:
        self._telemetry.warning("webhook rejected", status=status, reason=reason)
        also_by = {metric_names.REJECTED_BY: metric_names.SIGNATURE} if signature_refused else {}
        self._telemetry.count_also_by(metric_names.WEBHOOK_REJECTED, also_by, **{metric_names.REASON: reason})
        return http.error(status, message)

    def _refuse_signature(self, check: SignatureCheck) -> dict[str, Any]:
        status = 403 if check is SignatureCheck.MISMATCH else 401
        return self._reject(status, check.value, check.value.replace("_", " "), signature_refused=True)

    def _handshake(self, request: HttpRequest) -> dict[str, Any]:
        secrets = self._secrets()
        if secrets is None:
            return _failed()
        if not secrets.verify_token:
            self._telemetry.critical("the Meta secret has no verify_token; no subscription can be verified")
        challenge = webhook.handshake(request.query_values(), secrets.verify_token)
        if challenge is None:
            self._telemetry.count(metric_names.WEBHOOK_REJECTED, **{metric_names.REASON: "handshake_refused"})
            return http.response(403, "")  # nothing else: a prober learns nothing
        self._telemetry.info("webhook subscription verified")
        return http.response(200, challenge)

    def _deliver(self, request: HttpRequest) -> dict[str, Any]:
        claimed = signature.claimed_digest(request.headers.get(signature.HEADER))
        if isinstance(claimed, SignatureCheck):
            return self._refuse_signature(claimed)
        try:
            raw = request.body_bytes(self._config.webhook.max_body_bytes)
        except http.BodyTooLarge as exc:
            return self._reject(413, "too_large", str(exc))
        except http.BodyUndecodable as exc:
            return self._reject(400, "undecodable", str(exc))
        secrets = self._secrets()
        if secrets is None:
            return _failed()
        now = self._clock()
        check = signature.matches(raw, claimed, secrets.signing_keys(now))
        if check is SignatureCheck.MISMATCH:
            check = self._check_a_newer_secret(raw, claimed, secrets, now)
        if check is not SignatureCheck.VALID:
            return self._refuse_signature(check)
        return self._log_and_enqueue(raw)

    def _check_a_newer_secret(self, raw: bytes, claimed: bytes, cached: MetaSecrets, now: float) -> SignatureCheck:
        """After a rotation Meta signs with a secret this instance may not have read yet: look
        once (the source allows one early read per interval), and verify again only if it changed."""
        fresher = self._ports.secrets.refresh()
        if fresher is None or fresher.signing_keys(now) == cached.signing_keys(now):
            return SignatureCheck.MISMATCH
        self._telemetry.info("the Meta secret changed since this instance read it; using the new one")
        return signature.matches(raw, claimed, fresher.signing_keys(now))

    def _log_and_enqueue(self, raw: bytes) -> dict[str, Any]:
        now = self._clock()
        log_id = webhook.log_id(raw)
        telemetry = self._telemetry.bind(**{CORRELATION_ID: log_id})
        parsed = webhook.parse(raw, self._config.webhook.max_json_depth)
        route = None if parsed.payload is None else routing.route(parsed.payload)
        person = senders.only_person(parsed.payload)
        try:
            sender_hash = None if person is None else self._ports.senders.hash(person)
        except SenderKeyUnavailable as exc:
            # The row would be unfindable by an erasure request; Meta retries the delivery.
            telemetry.error("cannot read the sender key; answering 500 so Meta retries", error=str(exc))
            telemetry.count(metric_names.WEBHOOK_FAILED, **{metric_names.REASON: WebhookFailure.SECRETS_UNAVAILABLE})
            return _failed()
        entry = LogEntry(
            id=log_id,
            received_at=now,
            body=webhook_body.pack(raw),
            route=route,
            expires_at=retention.expiry(now, self._config.retention.raw_deliveries_seconds),
            unparseable_reason=None if parsed.problem is None else parsed.problem.value,
            sender_hash=sender_hash,
        )
        try:
            recorded = self._ports.log.record(entry)
        except WebhookLogUnavailable:
            telemetry.exception("could not log the delivery; answering 500 so Meta retries", bytes=len(raw))
            telemetry.count(metric_names.WEBHOOK_FAILED, **{metric_names.REASON: WebhookFailure.LOG_WRITE_FAILED})
            return _failed()
        if not recorded.created:
            telemetry.count(metric_names.WEBHOOK_DUPLICATE)
        if route is None:
            if recorded.created:
                telemetry.count(metric_names.WEBHOOK_UNPARSEABLE)
            telemetry.warning(
                "unparseable delivery logged, not enqueued",
                outcome="unparseable",
                reason=entry.unparseable_reason,
                bytes=len(raw),
            )
            return _ok()
        # A redelivery of a row that is still pending is sent again: Meta retries only what it
        # thinks failed, and the consumer's idempotency makes the copy harmless. A finished row
        # (or one the sweeper gave up on) is left alone.
        if not recorded.created and recorded.existing_status not in (schema.RowStatus.QUEUED, None):
            telemetry.info("duplicate delivery of a finished row", outcome="duplicate", status=recorded.existing_status)
            return _ok()
        created_at = now if recorded.created else (recorded.existing_received_at or now)
        return self._enqueue(telemetry, webhook.envelope(log_id, route, parsed, created_at), recorded.created)

    def _enqueue(self, telemetry: RequestTelemetry, envelope: Envelope, new: bool) -> dict[str, Any]:
        # The delivery id is already on the line as its correlation id.
        fields = {"lane": envelope.lane, "tenant": envelope.tenant, "kind": envelope.kind}
        try:
            self._ports.queue.send(self._config.queue_urls[envelope.lane], Outgoing(envelope))
        except Exception:
            telemetry.count(metric_names.ENQUEUE_FAILED, **{metric_names.LANE: envelope.lane})
            return self._note_unsent(telemetry, envelope, fields)
        telemetry.count(metric_names.WEBHOOK_ENQUEUED, **{metric_names.LANE: envelope.lane})
        telemetry.info("delivery enqueued", outcome="enqueued" if new else "re_enqueued", **fields)
        return _ok()

    def _note_unsent(
        self, telemetry: RequestTelemetry, envelope: Envelope, fields: Mapping[str, str]
    ) -> dict[str, Any]:
        try:
            self._ports.log.mark_unsent(envelope.id, envelope.created_at)
        except Exception:
            # Neither the queue nor the sweeper would ever see it: Meta's retry must.
            telemetry.exception("enqueue failed and the row could not be marked; answering 500", **fields)
            telemetry.count(metric_names.WEBHOOK_FAILED, **{metric_names.REASON: WebhookFailure.ENQUEUE_UNNOTED})
            return _failed()
        telemetry.exception(
            "enqueue failed after the row was written; the sweeper will replay it", outcome="enqueue_failed", **fields
        )
        return _ok()


def build_handler(
    config: IngressConfig,
    ports: IngressPorts,
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
            return _Door(config, ports, telemetry, clock).answer(request)
        except Exception:
            # A bug, not a dependency: 500 makes Meta retry. Had the row been written already,
            # the retry finds it pending and sends it again, so nothing is lost either way.
            telemetry.exception("webhook request failed")
            telemetry.count(metric_names.WEBHOOK_FAILED, **{metric_names.REASON: WebhookFailure.INTERNAL})
            return _failed()

    return handle


def create_handler(
    environ: Mapping[str, str], *, clients: Clients | None = None, clock: Callable[[], float] = time.time
) -> Handler:
    """The handler for one instance, from the variables the template gives the function. No AWS
    call is made here: the secret is read on the first request that needs it."""
    config = IngressConfig.from_environ(environ)
    tables = settings.Tables.from_environ(environ)
    clients = clients or Clients(region=settings.region(environ))
    ports = IngressPorts(
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
    )
    return build_handler(config, ports, logger_for(environ, SERVICE), metrics_for(environ, SERVICE), clock)


@functools.cache
def _default_handler() -> Handler:
    return create_handler(os.environ)


def handler(event: Mapping[str, Any], context: Any) -> dict[str, Any]:
    return _default_handler()(event, context)
