"""Refusing, in this process, what AWS would refuse.

Every boto3 client made in the process passes through two hooks: `before-parameter-build` keeps
the call's own parameters in its request context, and `before-call` (just before the emulator
answers, see moto_direct.py) looks up who signs the call. Credentials the register knows are a
role session: each of the call's asks (asks.py) is evaluated against the role's policies and the
resource's (evaluation.py), and the first one refused is answered as the service refuses it
(refusals.py), before moto sees the call. Credentials the register does not know are the
runtime's own, and tests', administrative calls: they keep full rights, as the account's
administrator does.

The runtime's own parts that act as AWS services (API Gateway invoking a function, EventBridge
sending to a queue, an alarm publishing to its topic) ask `service_may` before they act.

Decisions are cached per session, action, resource and context, so a call costs one dictionary
lookup per ask once warm; `register` and `unregister` clear the cache. Each allowed ask is noted
in the ledger under the role's logical ID, if one is kept (ledger.py).
"""

from __future__ import annotations

import hashlib
import secrets
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from local_aws.iam import ledger
from local_aws.iam.asks import Ask, Lookups, NoRule, asks
from local_aws.iam.evaluation import Decision, Principal, RoleSession, ServicePrincipal, context_for, evaluate
from local_aws.iam.refusals import refusal
from local_aws.iam.template import Grants

PARAMS = "lanes_iam_params"
"""Where the call's parameters wait in its request context for `before-call`."""


@dataclass(frozen=True)
class Credentials:
    access_key_id: str
    secret_access_key: str
    session_token: str

    def as_environ(self) -> dict[str, str]:
        """As Lambda gives them to a function."""
        return {
            "AWS_ACCESS_KEY_ID": self.access_key_id,
            "AWS_SECRET_ACCESS_KEY": self.secret_access_key,
            "AWS_SESSION_TOKEN": self.session_token,
        }


class Refused(Exception):
    """A service the runtime plays was refused by a resource's policy."""


class Enforcer:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._grants: list[Grants] = []
        self._sessions: dict[str, tuple[RoleSession, Grants]] = {}
        self._cache: dict[tuple[Any, ...], Decision] = {}
        self.lookups = Lookups(secret_arn=_secret_arn, topic_key=self._topic_key)

    # ------------------------------------------------------------------ the register

    def register(self, grants: Grants) -> None:
        with self._lock:
            self._grants.append(grants)
            self._cache.clear()

    def unregister(self, grants: Grants) -> None:
        with self._lock:
            self._grants = [g for g in self._grants if g is not grants]
            self._sessions = {k: v for k, v in self._sessions.items() if v[1] is not grants}
            self._cache.clear()

    def assume(self, role_arn: str, session_name: str) -> Credentials:
        """Credentials for a session of `role_arn`, as Lambda gets them for a function's
        execution environment. The access key names the session, so the same session gets the
        same key (its decisions stay cached across instances); the secret is fresh."""
        with self._lock:
            grants = next((g for g in reversed(self._grants) if role_arn in g.roles), None)
            if grants is None:
                raise KeyError(f"no deployed template defines the role {role_arn}")
            role = grants.roles[role_arn]
            digest = hashlib.sha256(f"{id(grants)}/{role_arn}/{session_name}".encode()).hexdigest().upper()
            key = "ASIA" + digest[:16]
            self._sessions[key] = (
                RoleSession(
                    account=grants.account,
                    role_name=role.name,
                    session_name=session_name,
                    policies=role.policies,
                    role_logical_id=role.logical_id,
                ),
                grants,
            )
        return Credentials(key, secrets.token_hex(20), secrets.token_urlsafe(48))

    def role_may(self, role_arn: str, session_name: str, action: str, resource: str) -> Decision:
        """What a service acting with a function's role may do (Lambda's poller receiving from
        the function's queue, Lambda writing its logs); noted in the ledger like the function's
        own calls."""
        credentials = self.assume(role_arn, session_name)
        session, grants = self._sessions[credentials.access_key_id]
        decision = self.decide(session, Ask(action, resource), grants)
        if decision.allowed:
            ledger.note(session.role_logical_id, action, grants.logical_name(resource))
        return decision

    def session(self, access_key_id: str | None) -> tuple[RoleSession, Grants] | None:
        return None if access_key_id is None else self._sessions.get(access_key_id)

    # ------------------------------------------------------------------ decisions

    def decide(self, principal: Principal, ask: Ask, grants: Grants) -> Decision:
        extra = tuple(sorted(ask.context.items())) if ask.context else ()
        cache_key = (principal.arn, ask.action, ask.resource, extra, id(grants))
        decision = self._cache.get(cache_key)
        if decision is None:
            decision = evaluate(
                principal,
                ask.action,
                ask.resource,
                context_for(principal, ask.context),
                resource_policy=grants.resource_policies.get(ask.resource),
                key_policy=ask.key or ask.resource in grants.keys,
            )
            self._cache[cache_key] = decision
        return decision

    def service_may(
        self, service: str, action: str, resource: str, *, source_arn: str, source_account: str | None = None
    ) -> Decision:
        """May `service` (e.g. `events.amazonaws.com`) act on `resource` for `source_arn`?"""
        grants = self._owner(resource)
        if grants is None:
            return Decision(True, "")
        principal = ServicePrincipal(service, grants.account)
        ask = Ask(
            action,
            resource,
            {"aws:SourceArn": source_arn, "aws:SourceAccount": source_account or grants.account},
            key=resource in grants.keys,
        )
        decision = self.decide(principal, ask, grants)
        if decision.allowed:
            ledger.note(service, action, grants.logical_name(resource))
        return decision

    def _owner(self, resource: str) -> Grants | None:
        for grants in reversed(self._grants):
            if resource in grants.logical or resource in grants.resource_policies:
                return grants
        return None

    def _topic_key(self, topic: str) -> str | None:
        for grants in reversed(self._grants):
            if topic in grants.topic_keys:
                return grants.topic_keys[topic]
        return None

    # ------------------------------------------------------------------ the hooks

    def remember_params(self, params: Mapping[str, Any], context: dict[str, Any] | None = None, **_: Any) -> None:
        if context is not None:
            context[PARAMS] = params

    def authorize(self, model: Any, params: Mapping[str, Any], request_signer: Any = None, **kwargs: Any) -> Any:
        credentials = getattr(request_signer, "_credentials", None)
        found = self.session(getattr(credentials, "access_key", None) if credentials is not None else None)
        if found is None:
            return None
        session, grants = found
        context = kwargs.get("context") or {}
        service = model.service_model.service_name
        try:
            wanted = asks(
                service,
                model.name,
                context.get(PARAMS) or {},
                region=context.get("client_region") or grants.region,
                account=grants.account,
                lookups=self.lookups,
            )
        except NoRule as rule:
            return refusal(
                model,
                params.get("url", ""),
                f"User: {session.arn} is not authorized to perform: {rule} (the local runtime has no IAM rule "
                "for this call; add one to local_aws/iam/asks.py)",
            )
        for ask in wanted:
            decision = self.decide(session, ask, grants)
            if not decision.allowed:
                return refusal(model, params.get("url", ""), _message(session, ask, decision))
        for ask in wanted:
            ledger.note(session.role_logical_id, ask.action, grants.logical_name(ask.resource))
        return None


def _message(session: RoleSession, ask: Ask, decision: Decision) -> str:
    text = (
        f"User: {session.arn} is not authorized to perform: {ask.action} on resource: {ask.resource} {decision.reason}"
    )
    return f"{text} the {ask.action} action" if decision.reason.startswith("because no") else text


def _secret_arn(secret_id: str) -> str:
    """Secrets Manager takes a name, a partial ARN or a full one; IAM sees the full ARN."""
    from moto.core import DEFAULT_ACCOUNT_ID
    from moto.secretsmanager.models import secretsmanager_backends

    for backend in secretsmanager_backends[DEFAULT_ACCOUNT_ID].values():
        for secret in backend.secrets.values():
            if secret_id in (secret.name, secret.arn) or secret.arn.startswith(f"{secret_id}-"):
                return str(secret.arn)
    return secret_id


ENFORCER = Enforcer()
_INSTALLED = False


def install() -> None:
    """Hook every botocore session made from now on (the runtime and the test session call it
    once, before the emulator's own hook, so a refused call never reaches moto)."""
    global _INSTALLED
    if _INSTALLED:
        return
    from botocore import handlers

    from local_aws import moto_direct

    builtin = handlers.BUILTIN_HANDLERS
    position = next(
        (i for i, entry in enumerate(builtin) if len(entry) > 1 and entry[1] is moto_direct.answer), len(builtin)
    )
    builtin.insert(position, ("before-call", ENFORCER.authorize, handlers.REGISTER_LAST))
    builtin.insert(0, ("before-parameter-build", ENFORCER.remember_params))
    _INSTALLED = True
