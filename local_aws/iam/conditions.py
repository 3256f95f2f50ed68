"""IAM's condition operators, over a request's context keys.

Keys are case-insensitive (the context is keyed in lower case). A block holds operators; each
operator holds keys; each key holds values: every operator and every key must hold (and), any of
a key's values may match (or). A key missing from the request fails a positive operator and
passes a negated one (StringNotEquals, ArnNotLike...), unless `...IfExists` makes a missing key
pass either way; `Null` tests presence itself. `ForAnyValue:` and `ForAllValues:` compare a
multivalued key. An operator the runtime does not know refuses the policy rather than guessing.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Mapping, Sequence

from local_aws.iam.patterns import arn_matches, wildcard_matches


class UnsupportedPolicy(ValueError):
    """A policy uses an element the local runtime cannot evaluate as AWS does."""


Context = Mapping[str, Sequence[str]]
"""Condition keys (lower case) and their values: most keys have one."""


def _numeric(compare: Callable[[float, float], bool]) -> Callable[[str, str], bool]:
    def test(actual: str, expected: str) -> bool:
        try:
            return compare(float(actual), float(expected))
        except ValueError:
            return False

    return test


_POSITIVE: dict[str, Callable[[str, str], bool]] = {
    "StringEquals": operator.eq,
    "StringEqualsIgnoreCase": lambda a, e: a.lower() == e.lower(),
    "StringLike": lambda a, e: wildcard_matches(e, a),
    "ArnEquals": lambda a, e: arn_matches(e, a),
    "ArnLike": lambda a, e: arn_matches(e, a),
    "Bool": lambda a, e: a.lower() == e.lower(),
    "NumericEquals": _numeric(operator.eq),
    "NumericLessThan": _numeric(operator.lt),
    "NumericLessThanEquals": _numeric(operator.le),
    "NumericGreaterThan": _numeric(operator.gt),
    "NumericGreaterThanEquals": _numeric(operator.ge),
}
_NEGATED: dict[str, str] = {
    "StringNotEquals": "StringEquals",
    "StringNotEqualsIgnoreCase": "StringEqualsIgnoreCase",
    "StringNotLike": "StringLike",
    "ArnNotEquals": "ArnEquals",
    "ArnNotLike": "ArnLike",
    "NumericNotEquals": "NumericEquals",
}


def holds(conditions: Mapping[str, Mapping[str, Sequence[str]]], context: Context) -> bool:
    return all(_operator_holds(name, block, context) for name, block in conditions.items())


def check(conditions: Mapping[str, Mapping[str, Sequence[str]]]) -> None:
    """Refuse, when a policy is read, an operator `holds` could not evaluate."""
    for name in conditions:
        _split(name)


def _split(name: str) -> tuple[str, str, bool, bool]:
    """(set qualifier, base operator, negated, if-exists)."""
    qualifier, _, rest = name.rpartition(":")
    if qualifier not in ("", "ForAnyValue", "ForAllValues"):
        raise UnsupportedPolicy(f"condition operator {name}")
    if_exists = rest.endswith("IfExists")
    base = rest.removesuffix("IfExists")
    if base == "Null":
        return qualifier, base, False, if_exists
    negated = base in _NEGATED
    base = _NEGATED.get(base, base)
    if base not in _POSITIVE:
        raise UnsupportedPolicy(f"condition operator {name} is not evaluated by the local runtime")
    return qualifier, base, negated, if_exists


def _operator_holds(name: str, block: Mapping[str, Sequence[str]], context: Context) -> bool:
    qualifier, base, negated, if_exists = _split(name)
    for key, expected in block.items():
        actual = context.get(key.lower())
        if base == "Null":
            if (actual is None) != (expected[0].lower() == "true"):
                return False
            continue
        if actual is None:
            if if_exists or negated or qualifier == "ForAllValues":
                continue
            return False
        test = _POSITIVE[base]
        if qualifier == "ForAllValues":
            matched = all(any(test(a, e) for e in expected) for a in actual)
        else:
            matched = any(test(a, e) for a in actual for e in expected)
        if matched == negated:
            return False
    return True
