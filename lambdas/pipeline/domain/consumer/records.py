"""One SQS record of a Lambda event, read without trusting it.

A record whose body is not an envelope still has a message id (to answer for it) and a receipt
handle (to move it), so parsing never raises: it yields a `Received` with the problem attached.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pipeline.domain.envelope import Envelope, MalformedEnvelope


@dataclass(frozen=True)
class Received:
    message_id: str
    receipt_handle: str
    body: str
    receive_count: int
    sent_at: float | None
    envelope: Envelope | None
    problem: str | None = None
    """Why the body is not a usable envelope (then `envelope` is None)."""

    @property
    def tenant(self) -> str:
        return self.envelope.tenant if self.envelope else ""

    @functools.cached_property
    def body_bytes(self) -> int:
        """The body's size as SQS counts it (UTF-8), for pricing its re-send."""
        return len(self.body.encode("utf-8", "surrogatepass"))


def _int(value: Any, default: int) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        return default


def receive(record: Mapping[str, Any], lane: str) -> Received:
    attributes = record.get("attributes") or {}
    sent_ms = attributes.get("SentTimestamp")
    body = record.get("body")
    envelope: Envelope | None = None
    problem: str | None = None
    if not isinstance(body, str):
        problem = "record has no body"
    else:
        try:
            envelope = Envelope.from_json(body)
        except MalformedEnvelope as exc:
            problem = str(exc)
        else:
            if envelope.lane != lane:
                # Work for another lane would run under the wrong task and budgets; no retry
                # moves it, so it goes to the DLQ where someone can see how it got here.
                problem = f"envelope is for lane {envelope.lane!r}, this is {lane!r}"
                envelope = None
    return Received(
        message_id=str(record.get("messageId") or ""),
        receipt_handle=str(record.get("receiptHandle") or ""),
        body=body if isinstance(body, str) else "",
        receive_count=max(1, _int(attributes.get("ApproximateReceiveCount"), 1)),
        sent_at=None if sent_ms is None else _int(sent_ms, 0) / 1000.0,
        envelope=envelope,
        problem=problem,
    )
