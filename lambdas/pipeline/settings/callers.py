"""Which tenants a caller of the jobs API may act for, from its IAM identity. Pure.

API Gateway's IAM authorizer hands the function the caller's ARN (`requestContext.authorizer.iam.
userArn`): `arn:aws:sts::<account>:assumed-role/<role>/<session>` for a role's session,
`arn:aws:iam::<account>:user/<name>` for a user. It does not hand over principal tags, so the
binding is a mapping in the environment's config: principal to tenants (`JobsSettings.callers`,
settings/doors.py).

A grant names a principal as IAM writes it: `arn:aws:iam::<account>:role/<path/><name>` (any
session of that role), `arn:aws:iam::<account>:user/<path/><name>`, or `arn:aws:iam::<account>:root`
(every principal of that account: the API's behaviour before tenants were bound, kept only for
whoever chooses it). A session's ARN carries its role's name but not its path; a role's name is
unique in its account, so roles (and users) match by account and name.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from pipeline.settings import tenant_ids

ALL_TENANTS = "*"

_NAME = r"[\w+=,.@-]{1,64}"
_GRANT = re.compile(rf"arn:aws[a-z-]*:iam::(\d{{12}}):(?:(root)|(role|user)/(?:[\w+=,.@-]+/)*({_NAME}))")
_CALLER = re.compile(
    rf"arn:aws[a-z-]*:(?:sts::(\d{{12}}):assumed-role/({_NAME})/[^/]+|iam::(\d{{12}}):user/(?:[\w+=,.@-]+/)*({_NAME}))"
)


def grant_key(principal: str) -> str:
    """The key a grant is kept under (`role:<account>:<name>`, `user:...`, `account:<account>`);
    ValueError for anything else."""
    found = _GRANT.fullmatch(principal)
    if found is None:
        raise ValueError(
            f"{principal!r} is not an IAM role, user or account root ARN "
            "(arn:aws:iam::<account>:role/<name>, :user/<name> or :root)"
        )
    account, root, kind, name = found.groups()
    return f"account:{account}" if root else f"{kind}:{account}:{name}"


def caller_keys(caller_arn: str | None) -> tuple[str, ...]:
    """The grant keys a caller matches: its own role or user, and its account."""
    found = _CALLER.fullmatch(caller_arn or "")
    if found is None:
        return ()
    session_account, role, user_account, user = found.groups()
    if role is not None:
        return (f"role:{session_account}:{role}", f"account:{session_account}")
    return (f"user:{user_account}:{user}", f"account:{user_account}")


def principal_of(caller_arn: str | None) -> str:
    """The caller as a grant would name it, without its session name (for a person signed in
    through SSO that is often their email address, which stays out of logs and messages)."""
    found = _CALLER.fullmatch(caller_arn or "")
    if found is None:
        return "an unidentified caller"
    session_account, role, user_account, user = found.groups()
    if role is not None:
        return f"arn:aws:iam::{session_account}:role/{role}"
    return f"arn:aws:iam::{user_account}:user/{user}"


def check_tenants(tenants: Iterable[str]) -> tuple[str, ...]:
    values = tuple(tenants)
    if not values:
        raise ValueError("a grant needs at least one tenant (or '*' for all)")
    bad = [t for t in values if t != ALL_TENANTS and not tenant_ids.is_valid(t)]
    if bad:
        raise ValueError(f"not tenant ids: {bad}")
    return values


@dataclass(frozen=True)
class Callers:
    grants: Mapping[str, frozenset[str]]
    """Grant key to the tenants it may act for."""

    @classmethod
    def from_mapping(cls, raw: Mapping[str, Iterable[str]]) -> Callers:
        """From {principal ARN: tenants}; ValueError naming the first bad entry."""
        grants: dict[str, frozenset[str]] = {}
        for principal, tenants in raw.items():
            key = grant_key(principal)
            if key in grants:
                raise ValueError(f"{principal} is granted twice (grants match by account and name)")
            grants[key] = frozenset(check_tenants(tenants))
        return cls(grants)

    def tenants_of(self, caller_arn: str | None) -> frozenset[str]:
        granted: set[str] = set()
        for key in caller_keys(caller_arn):
            granted |= self.grants.get(key, frozenset())
        return frozenset(granted)

    def may_act_for(self, caller_arn: str | None, tenant: str) -> bool:
        tenants = self.tenants_of(caller_arn)
        return ALL_TENANTS in tenants or tenant in tenants
