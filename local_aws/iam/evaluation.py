"""AWS's policy evaluation for one request, within one account.

1. An explicit Deny in any policy that applies refuses the request.
2. Otherwise it is allowed when the principal's identity policies allow it, or when the resource's
   policy allows that principal by name (its role, its session, its service). A resource policy
   that names the account (`arn:aws:iam::<account>:root`) delegates to the account's IAM: the
   identity policies must allow it too.
3. A KMS key is the exception: its key policy must allow the request, directly or by delegating
   to the account; without a key policy nothing may use the key.
4. A service principal has no identity policies: only a resource policy can let it in.

There are no permission boundaries, session policies or SCPs in this project; they are not
evaluated.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from local_aws.iam.conditions import Context, holds
from local_aws.iam.documents import ALLOW, DENY, Statement
from local_aws.iam.patterns import arn_matches


@dataclass(frozen=True)
class RoleSession:
    """A function's credentials: a session of its execution role."""

    account: str
    role_name: str
    session_name: str
    policies: tuple[Statement, ...] = field(repr=False)
    role_logical_id: str = ""
    """The role's logical ID in the template, by which uses are recorded."""

    @property
    def role_arn(self) -> str:
        return f"arn:aws:iam::{self.account}:role/{self.role_name}"

    @property
    def arn(self) -> str:
        return f"arn:aws:sts::{self.account}:assumed-role/{self.role_name}/{self.session_name}"


@dataclass(frozen=True)
class ServicePrincipal:
    """An AWS service acting for a resource of the account (an alarm, a rule, an API)."""

    service: str
    account: str

    @property
    def arn(self) -> str:
        return self.service


Principal = RoleSession | ServicePrincipal


@dataclass(frozen=True)
class Decision:
    allowed: bool
    reason: str
    """Why not, in AWS's words: "no identity-based policy allows", "an explicit deny in a
    resource-based policy"...; empty when allowed."""


ALLOWED = Decision(True, "")


def _names(principal: Principal, statement: Statement) -> str | None:
    """How a resource policy statement names `principal`: "direct", "account", or None."""
    names = statement.principals
    if names is None:
        return None
    if names.everyone:
        return "direct"
    if isinstance(principal, ServicePrincipal):
        return "direct" if principal.service in names.services else None
    for name in names.aws:
        if name in (principal.account, f"arn:aws:iam::{principal.account}:root"):
            return "account"
        if name in (principal.role_arn, principal.arn) or arn_matches(name, principal.arn):
            return "direct"
    return None


def _applies(statement: Statement, action: str, resource: str, context: Context) -> bool:
    return (
        statement.matches_action(action)
        and statement.matches_resource(resource)
        and holds(statement.conditions, context)
    )


def evaluate(
    principal: Principal,
    action: str,
    resource: str,
    context: Context,
    *,
    resource_policy: Sequence[Statement] | None,
    key_policy: bool = False,
) -> Decision:
    """`resource_policy` is the resource's own policy (None: it has none); `key_policy` says the
    resource is a KMS key, whose policy is required."""
    identity = principal.policies if isinstance(principal, RoleSession) else ()
    resource_statements = resource_policy or ()
    for statement in identity:
        if statement.effect == DENY and _applies(statement, action, resource, context):
            return Decision(False, "with an explicit deny in an identity-based policy")
    for statement in resource_statements:
        if statement.effect == DENY and _names(principal, statement) and _applies(statement, action, resource, context):
            return Decision(False, "with an explicit deny in a resource-based policy")
    identity_allows = any(s.effect == ALLOW and _applies(s, action, resource, context) for s in identity)
    granted: set[str] = set()
    for statement in resource_statements:
        if statement.effect == ALLOW:
            how = _names(principal, statement)
            if how and _applies(statement, action, resource, context):
                granted.add(how)
    if key_policy:
        if resource_policy is None:
            return Decision(False, "because no resource-based policy allows")
        if "direct" in granted or ("account" in granted and identity_allows):
            return ALLOWED
        return Decision(False, "because no resource-based policy allows" if not granted else _NO_IDENTITY)
    if "direct" in granted or identity_allows:
        return ALLOWED
    if isinstance(principal, ServicePrincipal):
        return Decision(False, "because no resource-based policy allows")
    return Decision(False, _NO_IDENTITY)


_NO_IDENTITY = "because no identity-based policy allows"


def context_for(principal: Principal, extra: Mapping[str, str] | None = None) -> dict[str, tuple[str, ...]]:
    """The global condition keys of a request from `principal`, over TLS as every SDK call is."""
    context: dict[str, tuple[str, ...]] = {"aws:securetransport": ("true",)}
    if isinstance(principal, RoleSession):
        context["aws:principalaccount"] = (principal.account,)
        context["aws:principalarn"] = (principal.role_arn,)
        context["aws:userid"] = (f"{principal.role_name}:{principal.session_name}",)
    else:
        context["aws:principalservicename"] = (principal.service,)
    for key, value in (extra or {}).items():
        context[key.lower()] = (value,)
    return context
