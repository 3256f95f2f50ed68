"""The one message shape every lane carries.

`id` names the obligation: a webhook-log row (source "webhook"), a job row (source "job"), or
work with no row of its own (source "internal": schedule ticks, coalesced reply turns). The
payload travels inline when it is small, otherwise `ref` points at the row that holds it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, fields, replace
from datetime import datetime
from typing import Any

SOURCES = ("webhook", "job", "internal")
INLINE_PAYLOAD_LIMIT = 200 * 1024
"""Leaves headroom under SQS's message size for the envelope and attributes."""
SQS_BATCH_ENTRIES = 10
"""SQS takes at most ten entries in one batch call."""
SQS_BATCH_BYTES = 256 * 1024
"""The most payload one SendMessageBatch carries: every entry's body and attributes together."""


class MalformedEnvelope(ValueError):
    """The message body is not an envelope; no retry can fix it."""


def _epoch(value: Any) -> float:
    """Epoch seconds; an ISO-8601 string is accepted too, because an EventBridge schedule can only
    stamp its event time as text."""
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
    return float(value)


@dataclass(frozen=True)
class Envelope:
    id: str
    lane: str
    tenant: str
    kind: str
    source: str
    created_at: float
    deadline: float | None = None
    attempt: int = 0
    """Failed attempts carried across re-sends (a deferral re-send keeps it, never raises it)."""
    deferrals: int = 0
    payload: Any = None
    ref: str | None = None
    progress: Mapping[str, Any] | None = None
    """Where a task that had more to do than its time left off (errors.MoreToDo), carried by the
    re-send; None for work nobody has started."""
    generation: int = 0
    """0 for the pipeline's own traffic; a replay's generation otherwise (domain/consumer/generations.py).
    Left out of the JSON when 0, so a message of generation 0 is byte for byte what it was."""

    def to_json(self) -> str:
        # Shallow on purpose: `dataclasses.asdict` deep-copies the payload, which was the largest
        # cost of the door's hot path, and json.dumps only reads it.
        body = {f.name: value for f in fields(self) if (value := getattr(self, f.name)) is not None}
        if not self.generation:
            del body["generation"]
        return json.dumps(body, separators=(",", ":"), ensure_ascii=False)

    def deferred(self, progress: Mapping[str, Any] | None = None) -> Envelope:
        """The copy a deferral re-sends; `progress`, when given, replaces what the task had saved."""
        return replace(self, deferrals=self.deferrals + 1, progress=self.progress if progress is None else progress)

    def continued(self, progress: Mapping[str, Any]) -> Envelope:
        """The copy re-sent for a task that had more to do (errors.MoreToDo): progress, not a
        deferral, so `deferrals` stays as it was. Counting it would spend the bound on waiting out
        AWS trouble (domain/consumer/settling.py) on a long erasure's scan pages."""
        return replace(self, progress=progress)

    def with_attempts(self, attempts: int) -> Envelope:
        return replace(self, attempt=attempts)

    def expires_at(self, default_expiry_seconds: float | None) -> float | None:
        """The absolute time after which nobody wants this work any more."""
        if self.deadline is not None:
            return self.deadline
        if default_expiry_seconds is None:
            return None
        return self.created_at + default_expiry_seconds

    @classmethod
    def from_json(cls, body: str) -> Envelope:
        try:
            raw = json.loads(body)
        except (json.JSONDecodeError, TypeError) as exc:
            raise MalformedEnvelope(f"body is not JSON: {exc}") from exc
        if not isinstance(raw, dict):
            raise MalformedEnvelope("body is not a JSON object")
        return cls.from_dict(raw)

    @classmethod
    def from_dict(cls, raw: dict[str, Any]) -> Envelope:
        missing = [k for k in ("id", "lane", "tenant", "kind", "source", "created_at") if raw.get(k) in (None, "")]
        if missing:
            raise MalformedEnvelope(f"envelope lacks {', '.join(missing)}")
        if raw["source"] not in SOURCES:
            raise MalformedEnvelope(f"unknown source {raw['source']!r}")
        try:
            envelope = cls(
                id=str(raw["id"]),
                lane=str(raw["lane"]),
                tenant=str(raw["tenant"]),
                kind=str(raw["kind"]),
                source=str(raw["source"]),
                created_at=_epoch(raw["created_at"]),
                deadline=None if raw.get("deadline") is None else float(raw["deadline"]),
                attempt=int(raw.get("attempt", 0)),
                deferrals=int(raw.get("deferrals", 0)),
                payload=raw.get("payload"),
                ref=raw.get("ref"),
                progress=raw.get("progress"),
                generation=int(raw.get("generation", 0)),
            )
        except (TypeError, ValueError) as exc:
            raise MalformedEnvelope(f"envelope field has the wrong type: {exc}") from exc
        if envelope.attempt < 0 or envelope.deferrals < 0 or envelope.generation < 0:
            raise MalformedEnvelope("attempt, deferrals and generation must be >= 0")
        if envelope.payload is None and envelope.ref is None:
            raise MalformedEnvelope("envelope has neither payload nor ref")
        if envelope.progress is not None and not isinstance(envelope.progress, dict):
            raise MalformedEnvelope("progress must be a JSON object")
        return envelope


@dataclass(frozen=True)
class Outgoing:
    """An envelope on its way to a lane queue, with the delay and message attributes to send."""

    envelope: Envelope
    delay_seconds: int = 0
    attributes: Mapping[str, str] | None = None
