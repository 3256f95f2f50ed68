"""IAM policy statements, parsed once, and how a request's action, resource and principal match
them.

How patterns match is patterns.py. A statement the runtime cannot evaluate faithfully
(NotPrincipal, an unknown condition operator, an unresolved intrinsic) is refused when it is read,
not guessed at.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from local_aws.iam import conditions as condition_operators
from local_aws.iam.conditions import UnsupportedPolicy
from local_aws.iam.patterns import action_matches, resource_matches

ALLOW, DENY = "Allow", "Deny"


@dataclass(frozen=True)
class Principals:
    """A resource policy statement's Principal: `everyone`, or AWS principals (account ids and
    role, user or session ARNs) and service principals."""

    everyone: bool = False
    aws: tuple[str, ...] = ()
    services: tuple[str, ...] = ()

    @classmethod
    def parse(cls, value: Any) -> Principals:
        if value == "*":
            return cls(everyone=True)
        if not isinstance(value, Mapping):
            raise UnsupportedPolicy(f"a Principal of {value!r}")
        unknown = set(value) - {"AWS", "Service"}
        if unknown:
            raise UnsupportedPolicy(f"Principal types {sorted(unknown)} are not evaluated by the local runtime")
        aws = _strings(value.get("AWS", ()))
        if "*" in aws:
            return cls(everyone=True, services=_strings(value.get("Service", ())))
        return cls(aws=aws, services=_strings(value.get("Service", ())))


@dataclass(frozen=True)
class Statement:
    effect: str
    actions: tuple[str, ...]
    not_actions: tuple[str, ...]
    resources: tuple[str, ...]
    not_resources: tuple[str, ...]
    principals: Principals | None
    """None in an identity policy, which has no Principal element."""
    conditions: Mapping[str, Mapping[str, tuple[str, ...]]]
    sid: str = ""

    @classmethod
    def parse(cls, raw: Mapping[str, Any], *, resource_policy: bool) -> Statement:
        if "NotPrincipal" in raw:
            raise UnsupportedPolicy("NotPrincipal is not evaluated by the local runtime")
        effect = raw.get("Effect")
        if effect not in (ALLOW, DENY):
            raise UnsupportedPolicy(f"a statement's Effect is {effect!r}")
        principals = None
        if resource_policy:
            if "Principal" not in raw:
                raise UnsupportedPolicy(f"a resource policy statement without a Principal: {dict(raw)!r}")
            principals = Principals.parse(raw["Principal"])
        conditions = {
            operator: {key: _strings(values) for key, values in block.items()}
            for operator, block in (raw.get("Condition") or {}).items()
        }
        condition_operators.check(conditions)
        return cls(
            effect=effect,
            actions=_strings(raw.get("Action", ())),
            not_actions=_strings(raw.get("NotAction", ())),
            resources=_strings(raw.get("Resource", ())),
            not_resources=_strings(raw.get("NotResource", ())),
            principals=principals,
            conditions=conditions,
            sid=str(raw.get("Sid", "")),
        )

    def matches_action(self, action: str) -> bool:
        if self.not_actions:
            return not any(action_matches(p, action) for p in self.not_actions)
        return any(action_matches(p, action) for p in self.actions)

    def matches_resource(self, resource: str) -> bool:
        if self.not_resources:
            return not any(resource_matches(p, resource) for p in self.not_resources)
        return any(resource_matches(p, resource) for p in self.resources)


def parse_document(document: Mapping[str, Any], *, resource_policy: bool) -> tuple[Statement, ...]:
    statements = document.get("Statement", ())
    if isinstance(statements, Mapping):
        statements = [statements]
    return tuple(Statement.parse(s, resource_policy=resource_policy) for s in statements)


def _strings(value: Any) -> tuple[str, ...]:
    if isinstance(value, str | bool | int | float):
        return (_text(value),)
    if isinstance(value, Sequence):
        return tuple(_text(v) for v in value)
    raise UnsupportedPolicy(f"expected a string or a list of strings, got {value!r} (an unresolved intrinsic?)")


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if not isinstance(value, str | int | float):
        raise UnsupportedPolicy(f"expected a string, got {value!r} (an unresolved intrinsic?)")
    return str(value)
