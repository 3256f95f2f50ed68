"""IAM policy statements, parsed once, and how a request's action, resource and principal match
them.

Actions match case-insensitively with `*` and `?` (IAM's rule); resources and ARNs match case-
sensitively, component by component for the first five of an ARN's six colon-separated parts, so
a wildcard in the region never spans into the account. A statement the runtime cannot evaluate
faithfully (NotPrincipal) is refused when it is read, not guessed at.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any


class UnsupportedPolicy(ValueError):
    """A policy uses an element the local runtime cannot evaluate as AWS does."""


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
    raise UnsupportedPolicy(f"expected a string or a list of strings, got {value!r}")


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if not isinstance(value, str | int | float):
        raise UnsupportedPolicy(f"expected a string, got {value!r} (an unresolved intrinsic?)")
    return str(value)


@functools.lru_cache(maxsize=4096)
def _glob(pattern: str, case_sensitive: bool) -> re.Pattern[str]:
    """IAM's wildcards only: `*` any run of characters, `?` any one; everything else literal."""
    body = "".join(".*" if c == "*" else "." if c == "?" else re.escape(c) for c in pattern)
    return re.compile(f"{body}\\Z", re.DOTALL if case_sensitive else re.DOTALL | re.IGNORECASE)


def wildcard_matches(pattern: str, value: str, *, case_sensitive: bool = True) -> bool:
    if pattern == "*":
        return True
    if "*" not in pattern and "?" not in pattern:
        return pattern == value if case_sensitive else pattern.lower() == value.lower()
    return _glob(pattern, case_sensitive).match(value) is not None


def action_matches(pattern: str, action: str) -> bool:
    return wildcard_matches(pattern, action, case_sensitive=False)


def arn_matches(pattern: str, arn: str) -> bool:
    """ArnLike: each of the first five components on its own, the resource part as a whole."""
    if pattern == "*":
        return True
    pattern_parts = pattern.split(":", 5)
    arn_parts = arn.split(":", 5)
    if len(pattern_parts) != 6 or len(arn_parts) != 6:
        return wildcard_matches(pattern, arn)
    return all(wildcard_matches(p, a) for p, a in zip(pattern_parts, arn_parts, strict=True))


def resource_matches(pattern: str, resource: str) -> bool:
    return arn_matches(pattern, resource) if pattern.startswith("arn:") else wildcard_matches(pattern, resource)
