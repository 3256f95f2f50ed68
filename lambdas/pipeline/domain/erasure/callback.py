"""The rules of Meta's data-deletion callback (`POST /meta/data-deletion`) and of an erasure's
status page (`GET /meta/data-deletion/{code}`). handlers/erasure.py wires them to AWS; the
contract is the handler's docstring.

Every 500 is raised (`http.Failed` with its reason, or the store's JobsTableUnavailable) for the
handler to answer and count, the same way as for a bug.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from pipeline import metric_names
from pipeline.domain import http
from pipeline.domain.erasure import requests as erasure
from pipeline.domain.erasure import signed_request
from pipeline.domain.erasure.ports import Erasures, IdentityLinks
from pipeline.domain.erasure.requests import ErasuresBusy, IdentityLinksUnavailable
from pipeline.domain.erasure.signed_request import Refusal, Refused
from pipeline.domain.http import HttpRequest, Reply
from pipeline.domain.meta_secret import MetaSecrets, SecretsMisconfigured, SecretsUnavailable
from pipeline.domain.ports import SecretSource, SenderHasher, Telemetry
from pipeline.domain.senders import SenderKeyUnavailable
from pipeline.metric_names import ErasureFailure

BUSY_RETRY_SECONDS = 300


@dataclass(frozen=True)
class ErasureCallbackPorts:
    secrets: SecretSource
    senders: SenderHasher
    requests: Erasures
    links: IdentityLinks


class ErasureCallback:
    """One request's answer; made per request, so nothing of one request reaches the next."""

    def __init__(
        self,
        max_body_bytes: int,
        ports: ErasureCallbackPorts,
        telemetry: Telemetry,
        clock: Callable[[], float],
        *,
        max_age_seconds: float,
    ) -> None:
        self._max_body_bytes = max_body_bytes
        self._max_age_seconds = max_age_seconds
        self._ports = ports
        self._telemetry = telemetry
        self._clock = clock

    def answer(self, request: HttpRequest) -> Reply:
        if request.method == "POST":
            return self._erase(request)
        if request.method == "GET":
            return self._status(request)
        return http.error(405, "method not allowed", headers={"allow": "GET, POST"})

    def _refuse(self, status: int, reason: str, message: str) -> Reply:
        self._telemetry.warning("erasure request refused", status=status, reason=reason)
        self._telemetry.count(metric_names.ERASURE_REFUSED, **{metric_names.REASON: reason})
        return http.error(status, message)

    def _secrets(self) -> MetaSecrets:
        try:
            return self._ports.secrets.get()
        except (SecretsMisconfigured, SecretsUnavailable) as exc:
            self._telemetry.error("cannot use the Meta secret", error=str(exc))
            raise http.Failed(ErasureFailure.SECRETS_UNAVAILABLE) from exc

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

    def _erase(self, request: HttpRequest) -> Reply:
        try:
            raw = request.body_bytes(self._max_body_bytes)
        except http.BodyTooLarge as exc:
            return self._refuse(413, "too_large", str(exc))
        except http.BodyUndecodable as exc:
            return self._refuse(400, "undecodable", str(exc))
        try:
            signed = signed_request.from_form(raw)
            person = self._verified(signed)
            signed_request.check_fresh(person, now=self._clock(), max_age_seconds=self._max_age_seconds)
        except Refused as exc:
            return self._refuse(exc.refusal.status, exc.refusal.value, str(exc))
        try:
            sender_hash = self._ports.senders.hash(person.user_id)
        except SenderKeyUnavailable as exc:
            self._telemetry.error("cannot read the sender key", error=str(exc))
            raise http.Failed(ErasureFailure.SECRETS_UNAVAILABLE) from exc
        # The id Meta sends is app-scoped; what is stored is keyed by the ids the product linked it
        # to (phone numbers, page- and Instagram-scoped ids), so those are erased with it.
        try:
            linked = self._ports.links.resolve(sender_hash)
        except IdentityLinksUnavailable as exc:
            self._telemetry.error("cannot read the identity links", error=str(exc))
            raise http.Failed(ErasureFailure.TABLE_UNAVAILABLE) from exc
        try:
            requested = self._ports.requests.request(sender_hash, erasure.META, now=self._clock(), linked=linked)
        except ErasuresBusy as exc:
            self._telemetry.warning("erasure refused: the lane's queue of erasures is full", error=str(exc))
            self._telemetry.count(metric_names.ERASURE_REFUSED, **{metric_names.REASON: "busy"})
            return http.error(
                503, "too many erasures are waiting; try again later", headers={"retry-after": str(BUSY_RETRY_SECONDS)}
            )
        # The job id, never the code or the person: the code is the status page's credential.
        self._telemetry.info(
            "erasure requested",
            outcome="repeated" if requested.repeated else "requested",
            id=requested.job_id,
            sent=requested.sent,
            linked=len(linked),
        )
        self._telemetry.count(metric_names.ERASURE_REPEATED if requested.repeated else metric_names.ERASURE_REQUESTED)
        base = request.base_url() or ""
        return http.json_response(
            200, {"url": f"{base}{erasure.CALLBACK_PATH}/{requested.code}", "confirmation_code": requested.code}
        )

    def _status(self, request: HttpRequest) -> Reply:
        code = request.path_parameters.get("code") or request.path.rsplit("/", 1)[-1]
        shown = self._ports.requests.status(code) if erasure.is_code(code) else None
        if shown is None:
            return http.error(404, "unknown confirmation code")
        return http.json_response(200, shown)
