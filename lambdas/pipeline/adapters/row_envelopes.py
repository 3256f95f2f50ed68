"""Rebuilding a pending row's message from the row itself, for the sweeper to replay.

The row is the record, so everything a consumer needs is on it. Webhook deliveries travel by
reference (the body may be large or compressed; the consumer loads it from the row), jobs
inline when the payload is small. A replay carries the attempts the row has recorded, so a replayed
job is not treated as fresh by the consumer's retry accounting, and the progress its task noted
(schema.PROGRESS), so a long job is taken up where it got to.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from decimal import Decimal
from typing import Any

from pipeline import schema
from pipeline.domain.envelope import INLINE_PAYLOAD_LIMIT, Envelope
from pipeline.schema.jobs import CREATED_AT, DEADLINE, PAYLOAD
from pipeline.schema.rows import ATTEMPTS, KIND, LANE, TENANT
from pipeline.schema.webhook_log import RECEIVED_AT

# Row attributes beyond the key and the pending index (see schema.py).

WEBHOOK_KIND = "meta.webhook"
"""Used when a webhook row does not name its kind (the ingress decides; the consumer routes by lane)."""


class UnreplayableRow(ValueError):
    """The row lacks what a message needs; no replay can fix it."""


def plain(value: Any) -> Any:
    """DynamoDB numbers come back as Decimal, which JSON cannot carry."""
    if isinstance(value, Decimal):
        return int(value) if value == value.to_integral_value() else float(value)
    if isinstance(value, Mapping):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set):
        return [plain(v) for v in value]
    return value


def _required(item: Mapping[str, Any], name: str) -> str:
    value = item.get(name)
    if value in (None, ""):
        raise UnreplayableRow(f"row has no {name}")
    return str(value)


def _number(item: Mapping[str, Any], name: str) -> float | None:
    value = item.get(name)
    return None if value is None else float(value)


def _created_at(item: Mapping[str, Any]) -> float:
    # Jobs record `created_at`, the webhook log `received_at`; both rows carry `pending_since`.
    for name in (CREATED_AT, RECEIVED_AT, schema.PENDING_SINCE):
        value = _number(item, name)
        if value is not None:
            return value
    raise UnreplayableRow(f"row has none of {CREATED_AT}, {RECEIVED_AT}, {schema.PENDING_SINCE}")


def _attempts(item: Mapping[str, Any]) -> int:
    """Failed attempts the consumer recorded on the row; a replay carries them on, so replaying
    does not hand a failing row a fresh retry budget."""
    return int(_number(item, ATTEMPTS) or 0)


def webhook_envelope(item: Mapping[str, Any]) -> Envelope:
    row_id = _required(item, schema.ID)
    return Envelope(
        id=row_id,
        lane=_required(item, LANE),
        tenant=_required(item, TENANT),
        kind=str(item.get(KIND) or WEBHOOK_KIND),
        source="webhook",
        created_at=_created_at(item),
        attempt=_attempts(item),
        ref=row_id,
    )


def job_envelope(item: Mapping[str, Any]) -> Envelope:
    row_id = _required(item, schema.ID)
    payload = plain(item.get(PAYLOAD))
    inline = payload is not None and not isinstance(payload, bytes | bytearray)
    if inline and len(json.dumps(payload, separators=(",", ":"), ensure_ascii=False).encode()) > INLINE_PAYLOAD_LIMIT:
        inline = False
    return Envelope(
        id=row_id,
        lane=_required(item, LANE),
        tenant=_required(item, TENANT),
        kind=_required(item, KIND),
        source="job",
        created_at=_created_at(item),
        deadline=_number(item, DEADLINE),
        attempt=_attempts(item),
        payload=payload if inline else None,
        ref=None if inline else row_id,
        progress=_progress(item),
    )


def _progress(item: Mapping[str, Any]) -> dict[str, Any] | None:
    """What the job's task last said it got to (schema.PROGRESS): a replay takes up from there."""
    progress = plain(item.get(schema.PROGRESS))
    return progress if isinstance(progress, dict) else None
