"""The reply of a turn, for `lanectl trace` of an `ai.inbound` job (ops/commands/trace.py): what
became of it (sent, failed with Meta's code, unanswered and why, or still on its way), how many
attempts were made, Meta's message id, and each status Meta sent for it with its time.

One consistent GetItem on the data table: the reply item, found from the job's own payload
(`conversation`, `message_id`: tasks/ai.py stores a turn's reply under the message it answers).
The conversation id names a person (usually their number) and the reply's text is their thread:
both only with `--show-personal`. A message whose turn was answered by a later one has no reply
of its own, and says so.
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Mapping
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

from pipeline.domain.dependencies import meta_send as ms
from pipeline.schema.jobs import PAYLOAD
from pipeline.tasks.conversations import conversation_pk
from pipeline.tasks.replies import STATUS_AT

_GZIP_MAGIC = b"\x1f\x8b"


def job_payload(row: Mapping[str, Any]) -> Any:
    """A job row's payload, as the consumer reads it: a map, or JSON (gzipped when large)."""
    value = row.get(PAYLOAD)
    if isinstance(value, bytes | bytearray):
        raw = bytes(value)
        try:
            return json.loads(gzip.decompress(raw) if raw.startswith(_GZIP_MAGIC) else raw)
        except (ValueError, OSError):
            return None
    return value


def reply_key(row: Mapping[str, Any]) -> dict[str, str] | None:
    """Where the job's turn keeps its reply; None when its payload names no conversation or message."""
    payload = job_payload(row)
    if not isinstance(payload, Mapping):
        return None
    conversation, message_id = str(payload.get("conversation") or ""), str(payload.get("message_id") or "")
    if not conversation or not message_id:
        return None
    return {"pk": conversation_pk(str(row.get("tenant") or ""), conversation), "sk": f"reply#{message_id}"}


def _iso(value: Any) -> str:
    try:
        return datetime.fromtimestamp(float(value), UTC).isoformat(timespec="seconds")
    except (TypeError, ValueError):
        return "?"


def outcome(reply: Mapping[str, Any] | None) -> str:
    if reply is None:
        return "no reply of its own: not answered yet, or answered by a later message's turn"
    state = str(reply.get("send_state") or "")
    if not state:
        return "stored only: the turn named no reply_to, so nothing was sent"
    if state == ms.SENT:
        how = {"status": "Meta's status", "answer": "Meta's answer"}.get(str(reply.get("resolved_by") or ""))
        return "sent" + (f" (known from {how})" if how else "")
    if state == ms.FAILED:
        return f"failed: Meta took it, then reported it failed (code {reply.get('failed_code', '?')})"
    if state == ms.UNANSWERED:
        reason = str(reply.get("send_error") or "?")
        after = reply.get("unknown_reason")
        return f"unanswered: {reason}" + (f" after {after}" if reason == "outcome_unknown" and after else "")
    if state in (ms.CALLING, ms.UNKNOWN):
        return f"{state}: the last attempt's outcome is not known yet; waiting for Meta's status, never resent"
    if state == ms.RETRY:
        return f"retry: Meta refused the last attempt ({reply.get('send_error', '?')}); it will be sent again"
    return f"{state}: waiting to be sent"


def view(reply: Mapping[str, Any] | None, personal: bool) -> dict[str, Any]:
    """What the trace shows of the reply (text and JSON alike)."""
    if reply is None:
        return {"outcome": outcome(None)}
    found: dict[str, Any] = {
        "outcome": outcome(reply),
        "state": reply.get("send_state"),
        "attempts": _number(reply.get("send_attempts") or 0),
        "message_id": reply.get("message_id"),
        "statuses": {name: _iso(reply[at]) for name, at in STATUS_AT.items() if at in reply},
    }
    if reply.get("failed_code") is not None:
        found["failed_code"] = _number(reply["failed_code"])
    if personal:
        found["text"] = reply.get("sent_text") or reply.get("text")
    return found


def lines(found: Mapping[str, Any]) -> list[tuple[str, str]]:
    """(step, detail) lines of the text trace."""
    steps = [("reply", str(found["outcome"]))]
    if "state" not in found:
        return steps
    steps.append(("attempts", str(found["attempts"])))
    steps.append(("meta id", str(found.get("message_id") or "-")))
    statuses = found.get("statuses") or {}
    steps.append(("statuses", ", ".join(f"{name} {at}" for name, at in statuses.items()) or "none received"))
    if "text" in found:
        steps.append(("reply text", str(found["text"])))
    return steps


def _number(value: Any) -> int | float:
    if isinstance(value, Decimal):
        return int(value) if value == value.to_integral_value() else float(value)
    return value
