"""The Meta webhook door's rules (`GET/POST /webhooks/meta`): verify, cap, log, route, enqueue,
answer. handlers/ingress.py wires them to AWS; the contract is the handler's docstring.

Every 500 is raised as `http.Failed` with its reason, after logging why: the handler answers and
counts it, the same way as for a bug.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from pipeline import metric_names, schema
from pipeline.domain import http, retention, senders, signature
from pipeline.domain.envelope import Envelope, Outgoing
from pipeline.domain.http import HttpRequest, Reply
from pipeline.domain.meta_secret import MetaSecrets, SecretsMisconfigured, SecretsUnavailable
from pipeline.domain.ports import CORRELATION_ID, SecretSource, Sender, SenderHasher, Telemetry
from pipeline.domain.senders import SenderKeyUnavailable
from pipeline.domain.signature import SignatureCheck
from pipeline.domain.webhook import account_silence, client_certificate, routing
from pipeline.domain.webhook import body as webhook_body
from pipeline.domain.webhook import delivery as webhook
from pipeline.domain.webhook.delivery import LogEntry, WebhookLogUnavailable
from pipeline.domain.webhook.ports import AccountNotes, DeliveryLog
from pipeline.metric_filters import ENQUEUED_MESSAGE
from pipeline.metric_names import WebhookFailure


def _ok() -> Reply:
    return http.response(200, "ok")


@dataclass(frozen=True)
class WebhookDoorPorts:
    """The door's dependencies; the benchmark swaps them for stubs to time the code alone."""

    secrets: SecretSource
    log: DeliveryLog
    queue: Sender
    senders: SenderHasher
    """The key the one person a delivery names is indexed by (read once per instance)."""
    accounts: AccountNotes | None = None
    """When each source account was last heard from; None where the environment watches none."""


@dataclass(frozen=True)
class WebhookDoorRules:
    max_body_bytes: int
    max_json_depth: int
    queue_urls: Mapping[str, str]
    """Every webhook lane's queue (routing.WEBHOOK_LANES)."""
    raw_deliveries_seconds: int
    """How long a delivery's row is kept (domain/retention.py)."""
    client_subject: str | None = None
    """With mutual TLS on, the common name of Meta's client certificate: a request without it
    (one sent to the execute-api address, which stays open for the other routes) is refused."""


class WebhookDoor:
    """One request's answer; made per request, so nothing of one request reaches the next."""

    def __init__(
        self, rules: WebhookDoorRules, ports: WebhookDoorPorts, telemetry: Telemetry, clock: Callable[[], float]
    ) -> None:
        self._rules = rules
        self._ports = ports
        self._telemetry = telemetry
        self._clock = clock

    def answer(self, request: HttpRequest) -> Reply:
        expected = self._rules.client_subject
        if expected is not None and not client_certificate.is_from(request.client_subject, expected):
            if request.client_subject is None:
                return self._reject(403, "client_certificate_missing", "a client certificate is required")
            return self._reject(403, "client_certificate_refused", "the client certificate is not accepted")
        if request.method == "POST":
            return self._deliver(request)
        if request.method == "GET":
            return self._handshake(request)
        return http.error(405, "method not allowed", headers={"allow": "GET, POST"})

    def _secrets(self) -> MetaSecrets:
        try:
            return self._ports.secrets.get()
        except SecretsMisconfigured as exc:
            self._telemetry.critical(
                "the Meta secret is unusable; every webhook fails until it is fixed", error=str(exc)
            )
            raise http.Failed(WebhookFailure.MISCONFIGURED) from exc
        except SecretsUnavailable as exc:
            self._telemetry.error("cannot read the Meta secret", error=str(exc))
            raise http.Failed(WebhookFailure.SECRETS_UNAVAILABLE) from exc

    def _reject(self, status: int, reason: str, message: str, *, signature_refused: bool = False) -> Reply:
        self._telemetry.warning("webhook rejected", status=status, reason=reason)
        also_by = {metric_names.REJECTED_BY: metric_names.SIGNATURE} if signature_refused else {}
        self._telemetry.count_also_by(metric_names.WEBHOOK_REJECTED, also_by, **{metric_names.REASON: reason})
        return http.error(status, message)

    def _refuse_signature(self, check: SignatureCheck) -> Reply:
        status = 403 if check is SignatureCheck.MISMATCH else 401
        return self._reject(status, check.value, check.value.replace("_", " "), signature_refused=True)

    def _handshake(self, request: HttpRequest) -> Reply:
        secrets = self._secrets()
        if not secrets.verify_token:
            self._telemetry.critical("the Meta secret has no verify_token; no subscription can be verified")
        challenge = webhook.handshake(request.query_values(), secrets.verify_token)
        if challenge is None:
            self._telemetry.count(metric_names.WEBHOOK_REJECTED, **{metric_names.REASON: "handshake_refused"})
            return http.response(403, "")  # nothing else: a prober learns nothing
        self._telemetry.info("webhook subscription verified")
        return http.response(200, challenge)

    def _deliver(self, request: HttpRequest) -> Reply:
        claimed = signature.claimed_digest(request.headers.get(signature.HEADER))
        if isinstance(claimed, SignatureCheck):
            return self._refuse_signature(claimed)
        try:
            raw = request.body_bytes(self._rules.max_body_bytes)
        except http.BodyTooLarge as exc:
            return self._reject(413, "too_large", str(exc))
        except http.BodyUndecodable as exc:
            return self._reject(400, "undecodable", str(exc))
        secrets = self._secrets()
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

    def _log_and_enqueue(self, raw: bytes) -> Reply:
        now = self._clock()
        log_id = webhook.log_id(raw)
        telemetry = self._telemetry.bind(**{CORRELATION_ID: log_id})
        parsed = webhook.parse(raw, self._rules.max_json_depth)
        route = None if parsed.payload is None else routing.route(parsed.payload)
        person, several = senders.named_on_row(parsed.payload)
        try:
            sender_hash = None if person is None else self._ports.senders.hash(person)
            # Every person a delivery names, on the row the door writes anyway: the erasure's scan
            # of the log finds it by any of them, processed or not (dead-lettered, say).
            named = tuple(sorted({self._ports.senders.hash(one) for one in several}))
        except SenderKeyUnavailable as exc:
            # The row would be unfindable by an erasure request; Meta retries the delivery.
            telemetry.error("cannot read the sender key; answering 500 so Meta retries", error=str(exc))
            raise http.Failed(WebhookFailure.SECRETS_UNAVAILABLE) from exc
        entry = LogEntry(
            id=log_id,
            received_at=now,
            body=webhook_body.pack(raw),
            route=route,
            expires_at=retention.expiry(now, self._rules.raw_deliveries_seconds),
            unparseable_reason=None if parsed.problem is None else parsed.problem.value,
            sender_hash=sender_hash,
            named=named,
        )
        try:
            recorded = self._ports.log.record(entry)
        except WebhookLogUnavailable as exc:
            telemetry.exception("could not log the delivery; answering 500 so Meta retries", bytes=len(raw))
            raise http.Failed(WebhookFailure.LOG_WRITE_FAILED) from exc
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
            reply = _ok()
        else:
            created_at = now if recorded.created else (recorded.existing_received_at or now)
            reply = self._enqueue(telemetry, webhook.envelope(log_id, route, parsed, created_at), recorded.created)
        # After the send, which it never delays; Meta sent something for these accounts either way.
        self._note_accounts(telemetry, parsed.payload, now)
        return reply

    def _note_accounts(self, telemetry: Telemetry, payload: object, now: float) -> None:
        """Meta sent something for these accounts: stamp it. Usually no call at all (an instance
        notes an account at most once per interval); a failure is logged and never fails the
        delivery, and the account is noted again after the interval (not on its next delivery: a
        failing table would otherwise cost every delivery a third call)."""
        notes = self._ports.accounts
        if notes is None:
            return
        try:
            notes.note(account_silence.accounts_in(payload), now)
        except Exception as exc:
            telemetry.warning("could not note the delivery's source accounts", error=str(exc))

    def _enqueue(self, telemetry: Telemetry, envelope: Envelope, new: bool) -> Reply:
        # The delivery id is already on the line as its correlation id.
        fields = {"lane": envelope.lane, "tenant": envelope.tenant, "kind": envelope.kind}
        try:
            self._ports.queue.send(self._rules.queue_urls[envelope.lane], Outgoing(envelope))
        except Exception:
            telemetry.count(metric_names.ENQUEUE_FAILED, **{metric_names.LANE: envelope.lane})
            return self._note_unsent(telemetry, envelope, fields)
        # Counted from this line by the log group's metric filter (pipeline/metric_filters.py).
        telemetry.info(ENQUEUED_MESSAGE, outcome="enqueued" if new else "re_enqueued", **fields)
        return _ok()

    def _note_unsent(self, telemetry: Telemetry, envelope: Envelope, fields: Mapping[str, str]) -> Reply:
        try:
            self._ports.log.mark_unsent(envelope.id, envelope.created_at)
        except Exception as exc:
            # Neither the queue nor the sweeper would ever see it: Meta's retry must.
            telemetry.exception("enqueue failed and the row could not be marked; answering 500", **fields)
            raise http.Failed(WebhookFailure.ENQUEUE_UNNOTED) from exc
        telemetry.exception(
            "enqueue failed after the row was written; the sweeper will replay it", outcome="enqueue_failed", **fields
        )
        return _ok()
