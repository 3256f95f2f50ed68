"""CloudWatch Logs metric filters, played on the local functions' output as CloudWatch would.

Only the JSON form of a filter pattern is read, and of it what the stack writes
(lambdas/pipeline/metric_filters.py): comparisons (`=`, `!=`) of a `$.field` path with a quoted
string, a number or `*` (present, whatever its value), joined by `&&` or `||` (a mix only inside
parentheses).
A pattern outside that is refused when the template is read, naming it, rather than matching
something CloudWatch would not. A line that is not a JSON object matches no JSON pattern, as in
CloudWatch; nor does a line missing a field a dimension reads.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

_TOKEN = re.compile(
    r"""\s*(?:(?P<path>\$(?:\.[A-Za-z_][A-Za-z0-9_]*)+)|(?P<op>!=|=)|(?P<join>&&|\|\|)|(?P<open>\()|(?P<close>\))"""
    r"""|(?P<string>"(?:[^"\\]|\\.)*")|(?P<star>\*)|(?P<number>-?\d+(?:\.\d+)?))"""
)
Condition = Callable[[Mapping[str, Any]], bool]


class UnsupportedPattern(ValueError):
    """A filter pattern this player cannot read (the stack writes none)."""


def _tokens(pattern: str) -> list[tuple[str, str]]:
    text = pattern.strip()
    if not (text.startswith("{") and text.endswith("}")):
        raise UnsupportedPattern(f"not a JSON filter pattern: {pattern!r}")
    body, found, at = text[1:-1], [], 0
    while at < len(body):
        if body[at:].strip() == "":
            break
        match = _TOKEN.match(body, at)
        if match is None or match.end() == at:
            raise UnsupportedPattern(f"cannot read {body[at:]!r} in {pattern!r}")
        kind = match.lastgroup or ""
        found.append((kind, match.group(kind)))
        at = match.end()
    return found


def _lookup(line: Mapping[str, Any], path: str) -> tuple[bool, Any]:
    value: Any = line
    for part in path.split(".")[1:]:
        if not isinstance(value, Mapping) or part not in value:
            return False, None
        value = value[part]
    return True, value


class _Parser:
    def __init__(self, pattern: str) -> None:
        self._pattern = pattern
        self._tokens = _tokens(pattern)
        self._at = 0

    def parse(self) -> Condition:
        condition = self._expression()
        if self._at != len(self._tokens):
            raise UnsupportedPattern(f"unexpected {self._tokens[self._at][1]!r} in {self._pattern!r}")
        return condition

    def _next(self, *kinds: str) -> str:
        if self._at >= len(self._tokens) or self._tokens[self._at][0] not in kinds:
            raise UnsupportedPattern(f"expected {' or '.join(kinds)} in {self._pattern!r}")
        self._at += 1
        return self._tokens[self._at - 1][1]

    def _peek(self) -> tuple[str, str] | None:
        return self._tokens[self._at] if self._at < len(self._tokens) else None

    def _expression(self) -> Condition:
        # One kind of join per level: a mix needs parentheses here, so nothing rests on a
        # precedence this player might read differently from CloudWatch.
        terms, joins = [self._term()], set()
        while (token := self._peek()) is not None and token[0] == "join":
            self._at += 1
            joins.add(token[1])
            terms.append(self._term())
        if len(joins) > 1:
            raise UnsupportedPattern(f"&& and || mixed without parentheses in {self._pattern!r}")
        if len(terms) == 1:
            return terms[0]
        if joins == {"&&"}:
            return lambda line: all(term(line) for term in terms)
        return lambda line: any(term(line) for term in terms)

    def _term(self) -> Condition:
        token = self._peek()
        if token is not None and token[0] == "open":
            self._at += 1
            inner = self._expression()
            self._next("close")
            return inner
        path = self._next("path")
        negate = self._next("op") == "!="
        upcoming = self._peek()
        kind = upcoming[0] if upcoming else ""
        raw = self._next("string", "star", "number")
        if kind == "star":
            return lambda line: _lookup(line, path)[0] != negate

        expected: Any = json.loads(raw) if kind == "string" else float(raw)

        def compare(line: Mapping[str, Any]) -> bool:
            present, value = _lookup(line, path)
            if not present:
                return False
            equal = value == expected if kind == "string" else _is_number(value) and float(value) == expected
            return equal != negate

        return compare


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


@dataclass(frozen=True)
class MetricFilter:
    """One AWS::Logs::MetricFilter: a pattern, and the metric each matching line adds to."""

    namespace: str
    metric: str
    matches: Condition
    dimensions: tuple[tuple[str, str], ...]
    value: float = 1.0
    unit: str = "None"

    @classmethod
    def of(cls, line_metric: Any, namespace: str) -> MetricFilter:
        """A filter as the stack writes it from a pipeline.metric_filters.LineMetric."""
        return cls(
            namespace=namespace,
            metric=line_metric.metric,
            matches=_Parser(line_metric.pattern).parse(),
            dimensions=tuple(line_metric.dimensions),
            unit="Count",
        )

    @classmethod
    def from_properties(cls, properties: Mapping[str, Any]) -> list[MetricFilter]:
        """The filters of one template resource (a MetricFilter has one transformation)."""
        condition = _Parser(str(properties["FilterPattern"])).parse()
        found = []
        for transformation in properties.get("MetricTransformations", []):
            value = str(transformation.get("MetricValue", "1"))
            if not re.fullmatch(r"-?\d+(\.\d+)?", value):
                raise UnsupportedPattern(f"metric value {value!r}: only a number is played")
            dimensions = tuple((d["Key"], d["Value"]) for d in transformation.get("Dimensions", []))
            found.append(
                cls(
                    namespace=str(transformation["MetricNamespace"]),
                    metric=str(transformation["MetricName"]),
                    matches=condition,
                    dimensions=dimensions,
                    value=float(value),
                    unit=str(transformation.get("Unit", "None")),
                )
            )
        return found

    def observe(self, line: Mapping[str, Any]) -> dict[str, str] | None:
        """The dimensions this line counts under, or None when it is not counted."""
        if not self.matches(line):
            return None
        dimensions = {}
        for name, path in self.dimensions:
            present, value = _lookup(line, path)
            if not present:
                return None
            dimensions[name] = str(value)
        return dimensions


def parsed_line(line: str) -> Mapping[str, Any] | None:
    """A log line as the JSON object a JSON pattern reads, or None."""
    if not line.startswith("{"):
        return None
    try:
        parsed = json.loads(line)
    except json.JSONDecodeError:
        return None
    return parsed if isinstance(parsed, dict) else None


def counts(filters: Iterable[MetricFilter], lines: Iterable[Mapping[str, Any]]) -> list[tuple[str, dict[str, str]]]:
    """(metric, dimensions) for every line each filter counts: what the filters would publish."""
    found = []
    for line in lines:
        for metric_filter in filters:
            dimensions = metric_filter.observe(line)
            if dimensions is not None:
                found.append((metric_filter.metric, dimensions))
    return found


class LineCounts:
    """A capture sink: each function's lines counted by its log group's filters, as CloudWatch Logs
    counts what it ingests. `put(namespace, name, dimensions, value, unit)` takes each count."""

    def __init__(self, filters: Mapping[str, list[MetricFilter]], put: Callable[..., None]) -> None:
        self._filters = dict(filters)
        self._put = put

    def sink(self, function: str, line: str) -> None:
        filters = self._filters.get(function)
        parsed = parsed_line(line) if filters else None
        if not filters or parsed is None:
            return
        for metric_filter in filters:
            dimensions = metric_filter.observe(parsed)
            if dimensions is not None:
                self._put(
                    metric_filter.namespace, metric_filter.metric, dimensions, metric_filter.value, metric_filter.unit
                )
