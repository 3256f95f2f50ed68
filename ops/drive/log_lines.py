"""The functions' structured log lines, as a scenario or the demo reads them: every line kept whole
(the runtime keeps only the last few thousand per function), outcome lines parsed."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

TERMINAL = frozenset({"done", "duplicate", "superseded", "expired", "dead_lettered"})
"""Outcomes after which a work id needs nothing more."""


RECEIVED_AT = "@timestamp"
"""When the line was written, as CloudWatch Logs stamps each event it ingests (the functions' lines
carry no time of their own: the event's is the one that counts, and the bytes are paid for)."""


@dataclass(frozen=True)
class RecordLine:
    """One consumer outcome line (`record <outcome>`), as the function logged it."""

    at: float
    lane: str
    tenant: str
    kind: str
    id: str
    outcome: str
    attempt: int
    receive_count: int
    deferrals: int
    queued_seconds: float | None
    reason: str | None
    raw: Mapping[str, Any]


class LineLog:
    """Every structured line every function printed, kept whole (the runtime keeps the last few
    thousand per function; a scenario needs all of its own)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.records: list[RecordLine] = []
        self.other: list[tuple[str, dict[str, Any]]] = []
        self.first_terminal: dict[str, RecordLine] = {}
        """The first terminal outcome line per work id, as it arrives."""

    def sink(self, function: str, line: str) -> None:
        if not line.startswith("{") or '"_aws"' in line:
            return
        try:
            parsed = json.loads(line)
        except json.JSONDecodeError:
            return
        if not isinstance(parsed, dict):
            return
        parsed[RECEIVED_AT] = time.time()
        message = str(parsed.get("message", ""))
        with self._lock:
            if "outcome" in parsed and (message.startswith("record ") or parsed["outcome"] == "would_defer"):
                record = RecordLine(
                    at=parsed[RECEIVED_AT],
                    lane=str(parsed.get("lane", "")),
                    tenant=str(parsed.get("tenant", "")),
                    kind=str(parsed.get("kind", "")),
                    id=str(parsed.get("id", "")),
                    outcome=str(parsed["outcome"]),
                    attempt=int(parsed.get("attempt") or 0),
                    receive_count=int(parsed.get("receive_count") or 1),
                    deferrals=int(parsed.get("deferrals") or 0),
                    queued_seconds=parsed.get("queued_seconds"),
                    reason=parsed.get("reason"),
                    raw=parsed,
                )
                self.records.append(record)
                if record.outcome in TERMINAL:
                    self.first_terminal.setdefault(record.id, record)
            else:
                self.other.append((function, parsed))

    def outcomes(
        self, *, lane: str | None = None, outcome: str | None = None, ids: set[str] | None = None
    ) -> list[RecordLine]:
        with self._lock:
            lines = list(self.records)
        return [
            r
            for r in lines
            if (lane is None or r.lane == lane)
            and (outcome is None or r.outcome == outcome)
            and (ids is None or r.id in ids)
        ]

    def lines(self, predicate: Callable[[str, dict[str, Any]], bool]) -> list[tuple[str, dict[str, Any]]]:
        with self._lock:
            lines = list(self.other)
        return [(f, p) for f, p in lines if predicate(f, p)]

    def finished(self, tenants: set[str], lane: str | None = None) -> dict[str, RecordLine]:
        """The first terminal outcome line per work id of these tenants."""
        with self._lock:
            lines = list(self.records)
        first: dict[str, RecordLine] = {}
        for r in lines:
            if r.tenant in tenants and r.outcome in TERMINAL and (lane is None or r.lane == lane):
                first.setdefault(r.id, r)
        return first
