"""IAM's patterns: actions match case-insensitively with `*` and `?`; resources and ARNs match
case-sensitively, component by component for the first five of an ARN's six colon-separated parts,
so a wildcard in the region never spans into the account, and an ARN pattern of fewer parts
matches nothing."""

from __future__ import annotations

import functools
import re


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
        return False
    return all(wildcard_matches(p, a) for p, a in zip(pattern_parts, arn_parts, strict=True))


def resource_matches(pattern: str, resource: str) -> bool:
    return arn_matches(pattern, resource) if pattern.startswith("arn:") else wildcard_matches(pattern, resource)
