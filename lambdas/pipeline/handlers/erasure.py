"""Meta's data-deletion callback (`POST /meta/data-deletion`) and the status of an erasure
(`GET /meta/data-deletion/{code}`).

Meta calls the callback when a person removes the app or asks for their data to be deleted, with a
`signed_request` (domain/signed_request.py). A request whose signature is missing or malformed is
401, one no app secret in force signed is 403, and nothing is written or sent for either. A signed
one becomes an erasure job (adapters/erasure_requests.py) naming the person only by their hash,
and the answer is what Meta asks for: `{"url": <status page>, "confirmation_code": <code>}`. Meta
shows both to the person. The erasure itself runs on its lane (tasks/erase.py).

The status page needs no credential but the code: 128 random bits, from which the job's id is
derived (the row does not hold the code). It shows pending, done or failed, and when.
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

from pipeline import metric_names, settings
from pipeline.adapters.api_telemetry import RequestTelemetry
from pipeline.adapters.clients import Clients
from pipeline.adapters.erasure_requests import ErasureRequests, ErasuresBusy, Requested
from pipeline.adapters.jobs_table import JobsTable, JobsTableUnavailable
from pipeline.adapters.observability import logger_for, metrics_for
from pipeline.adapters.queues import QueueSender
from pipeline.adapters.secrets import MetaSecrets, MetaSecretSource, SecretsMisconfigured, SecretsUnavailable
from pipeline.adapters.sender_key import SenderKey, SenderKeyUnavailable
from pipeline.domain import erasure, http, signed_request
from pipeline.domain.http import HttpRequest
from pipeline.domain.ports import SenderHasher
from pipeline.domain.signed_request import Refusal, Refused
from pipeline.metric_names import ErasureFailure

SERVICE = "erasure"
BUSY_RETRY_SECONDS = 300
Handler = Callable[[Mapping[str, Any], Any], dict[str, Any]]


class SecretSource(Protocol):
    def get(self) -> MetaSecrets: ...

    def refresh(self) -> MetaSecrets | None: ...


class Requests(Protocol):
    def request(self, sender_hash: str, requested_by: str, *, now: float, code: str | None = None) -> Requested: ...

    def status(self, code: str) -> dict[str, Any] | None: ...


@dataclass(frozen=True)
class ErasurePorts:
    secrets: SecretSource
    senders: SenderHasher
    requests: Requests


class _Unavailable(Exception):
    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class _Callback:
    def __init__(
        self,
        config: settings.ErasureSettings,
        ports: ErasurePorts,
        telemetry: RequestTelemetry,
        clock: Callable[[], float],
    ) -> None:
        self._config = config
        self._ports = ports
        self._telemetry = telemetry
        self._clock = clock

    def answer(self, request: HttpRequest) -> dict[str, Any]:
        if request.method == "POST":
            return self._erase(request)
        if request.method == "GET":
            return self._status(request)
        return http.error(405, "method not allowed", headers={"allow": "GET, POST"})

    def _refuse(self, status: int, reason: str, message: str) -> dict[str, Any]:
        self._telemetry.warning("erasure request refused", status=status, reason=reason)
        self._telemetry.count(metric_names.ERASURE_REFUSED, **{metric_names.REASON: reason})
        return http.error(status, message)

    def _secrets(self) -> MetaSecrets:
        try:
            return self._ports.secrets.get()
        except (SecretsMisconfigured, SecretsUnavailable) as exc:
            self._telemetry.error("cannot use the Meta secret", error=str(exc))
            raise _Unavailable(ErasureFailure.SECRETS_UNAVAILABLE) from exc

    def _verified(self, signed: str) -> signed_request.SignedRequest:
        now = self._clock()
        cached = self._secrets()
        try:
            return signed_request.verify(signed, cached.signing_keys(now))
        except Refused as exc:
            # A rotation this instance has not read yet: look once, as the webhook door does.
            fresher = self._ports.secrets.refresh() if exc.refusal is Refusal.MISMATCH else None
            if fresher is None or fresher.signing_keys(now) == cached.signing_keys(now):
                raise
            return signed_request.verify(signed, fresher.signing_keys(now))

    def _erase(self, request: HttpRequest) -> dict[str, Any]:
        try:
            raw = request.body_bytes(self._config.max_body_bytes)
        except http.BodyTooLarge as exc:
            return self._refuse(413, "too_large", str(exc))
        except http.BodyUndecodable as exc:
            return self._refuse(400, "undecodable", str(exc))
        try:
            signed = signed_request.from_form(raw)
            person = self._verified(signed)
        except Refused as exc:
            return self._refuse(exc.refusal.status, exc.refusal.value, str(exc))
        try:
            sender_hash = self._ports.senders.hash(person.user_id)
        except SenderKeyUnavailable as exc:
            self._telemetry.error("cannot read the sender key", error=str(exc))
            raise _Unavailable(ErasureFailure.SECRETS_UNAVAILABLE) from exc
        try:
            requested = self._ports.requests.request(sender_hash, erasure.META, now=self._clock())
        except ErasuresBusy as exc:
            self._telemetry.warning("erasure refused: the lane's queue of erasures is full", error=str(exc))
            self._telemetry.count(metric_names.ERASURE_REFUSED, **{metric_names.REASON: "busy"})
            return http.error(
                503, "too many erasures are waiting; try again later", headers={"retry-after": str(BUSY_RETRY_SECONDS)}
            )
        # The job id, never the code or the person: the code is the status page's credential.
        self._telemetry.info("erasure requested", outcome="requested", id=requested.job_id, sent=requested.sent)
        self._telemetry.count(metric_names.ERASURE_REQUESTED)
        base = request.base_url() or ""
        return http.json_response(
            200, {"url": f"{base}{erasure.CALLBACK_PATH}/{requested.code}", "confirmation_code": requested.code}
        )

    def _status(self, request: HttpRequest) -> dict[str, Any]:
        code = request.path_parameters.get("code") or request.path.rsplit("/", 1)[-1]
        shown = self._ports.requests.status(code) if erasure.is_code(code) else None
        if shown is None:
            return http.error(404, "unknown confirmation code")
        return http.json_response(200, shown)


def build_handler(
    config: settings.ErasureSettings,
    ports: ErasurePorts,
    logger: Logger,
    metrics: EphemeralMetrics,
    clock: Callable[[], float] = time.time,
) -> Handler:
    def handle(event: Mapping[str, Any], context: Any) -> dict[str, Any]:
        request = HttpRequest.from_event(event)
        telemetry = RequestTelemetry(
            logger, metrics, request_id=getattr(context, "aws_request_id", None) or request.request_id
        )
        reason = ErasureFailure.INTERNAL
        try:
            return _Callback(config, ports, telemetry, clock).answer(request)
        except _Unavailable as exc:
            reason = exc.reason
        except JobsTableUnavailable:
            telemetry.exception("jobs table unavailable")
            reason = ErasureFailure.TABLE_UNAVAILABLE
        except Exception:
            telemetry.exception("erasure request failed")
        telemetry.count(metric_names.ERASURE_FAILED, **{metric_names.REASON: reason})
        return http.error(500, "internal error")

    return handle


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
    clients = clients or Clients(region=settings.region(environ))
    ports = ErasurePorts(
        secrets=MetaSecretSource(
            clients.secretsmanager,
            settings.require(environ, settings.EnvVar.META_SECRET_ARN),
            clock,
            cache_seconds=config.secret_cache_seconds,
            refresh_seconds=config.secret_refresh_seconds,
        ),
        senders=SenderKey(clients.secretsmanager, settings.require(environ, settings.EnvVar.SENDER_KEY_ARN)),
        requests=ErasureRequests(
            JobsTable(clients.dynamodb, tables.jobs, tables.state),
            QueueSender(clients.sqs),
            queue_urls[config.lane],
            queued_limit=config.queued_limit,
            deadline_seconds=config.deadline_seconds,
            keep_seconds=kept.erasure_requests_seconds,
        ),
    )
    return build_handler(config, ports, logger_for(environ, SERVICE), metrics_for(environ, SERVICE), clock)


@functools.cache
def _default_handler() -> Handler:
    return create_handler(os.environ)


def handler(event: Mapping[str, Any], context: Any) -> dict[str, Any]:
    return _default_handler()(event, context)
