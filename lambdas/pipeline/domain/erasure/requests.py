"""Erasing a person: the request, its status, and what is left of a row afterwards.

A request (Meta's data-deletion callback, or `lanectl erase`) names a person by their hash only
(domain/senders.py) and becomes a job on the erasure lane, kind `privacy.erase`, tenant `privacy`:
so it is written before it is sent, replayed by the sweeper if its message is lost, retried and
dead-lettered like any job, and its status is its row's. The job's id derives from a random
confirmation code (the job id is a digest of it), so the code, which the person holds, is the only
way to read the status without IAM, and the row does not hold the code.

The job's task (tasks/erase.py) finds the person's rows and items (a scan of the webhook log, the
person's partition of the data table, the `by_sender` indexes of jobs and their items), deletes the
items, and empties each row down to its tombstone: status `erased`, and only what names no one
(the key, lane, tenant, kind and times). A row is emptied rather than deleted so that
a message still on its way finds it finished and does nothing; a deleted row would have its message
dead-lettered as `row_missing`, with the payload it carries.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import re
import secrets
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from pipeline import schema
from pipeline.domain.jobs import requests as jobs
from pipeline.domain.jobs.requests import Job, JobRequest

CALLBACK_PATH = "/meta/data-deletion"
"""Meta's data-deletion callback; the status page is this path followed by `/<code>`."""
LANE = "bulk"
"""The lane erasures run on: patient, and its tenant cap keeps them two at a time."""
TENANT = jobs.RESERVED_TENANT
KIND = jobs.RESERVED_KIND_PREFIX + "erase"
META = "meta"
OPERATOR = "operator"
REQUESTED_BY = (META, OPERATOR)
CODE_HEX_DIGITS = 32
"""128 random bits: the code is the status page's only credential."""
_CODE = re.compile(rf"[0-9a-f]{{{CODE_HEX_DIGITS}}}")

PENDING = "pending"
DONE = "done"
NO_DATA_HELD = "no_data_held"
"""Done, and nothing was held about the person: said so, rather than `done` over zero counts."""
FAILED = "failed"
MAX_LINKED = 50
"""Ids one erasure erases besides the one asked for; each is two terms of the log scan's filter (an
`IN` of at most 100 values, and a `contains`)."""
LINK_PREFIX = "identity#"
"""State-table item of the ids the product linked to an app-scoped id (adapters/identity_links.py)."""
OPEN_PREFIX = "erasure-open#"
"""State-table item per person with an erasure pending (`open_key`): which job, and the nonce its
code is derived from, so a repeat of the request answers the same code without making a job."""

_LOG_ROW_KEPT = ("lane", "tenant", "kind", "received_at")
_JOB_ROW_KEPT = ("lane", "tenant", "kind", "created_at", "deadline", "attempts", "deferrals")
ERASED_AT = "erased_at"


class ErasuresBusy(RuntimeError):
    """As many erasures are queued as the lane lets one tenant queue: try again later."""


class IdentityLinksUnavailable(RuntimeError):
    """The links from app-scoped ids to the ids the pipeline stores could not be read."""


@dataclass(frozen=True)
class Requested:
    code: str
    job_id: str
    sent: bool
    """False when the send failed: the row is pending, and the sweeper sends it."""
    repeated: bool = False
    """An erasure of the person was already pending: this is its code, and no job was made."""


def new_code(token_hex: Callable[[int], str] = secrets.token_hex) -> str:
    return token_hex(CODE_HEX_DIGITS // 2)


def is_code(value: object) -> bool:
    return isinstance(value, str) and _CODE.fullmatch(value) is not None


def job_id(code: str) -> str:
    return jobs.job_id(TENANT, code)


def link_key(app_scoped_hash: str) -> str:
    return f"{LINK_PREFIX}{app_scoped_hash}"


def open_key(sender_hash: str) -> str:
    return f"{OPEN_PREFIX}{sender_hash}"


def code_for(key: bytes, sender_hash: str, nonce: str) -> str:
    """The confirmation code of the erasure of `sender_hash` whose open item holds `nonce`: derived
    under the sender key, so no table holds a code (the status page's only credential)."""
    message = f"erasure-code\x00{sender_hash}\x00{nonce}".encode()
    return hmac.new(key, message, hashlib.sha256).hexdigest()[:CODE_HEX_DIGITS]


def hashes_of(sender_hash: str, linked: Sequence[str]) -> list[str]:
    """Every hash one erasure erases: the one asked for first, then each linked one once."""
    found = list(dict.fromkeys([sender_hash, *linked]))
    if len(found) > MAX_LINKED + 1:
        raise ValueError(f"an erasure takes at most {MAX_LINKED} linked ids, got {len(found) - 1}")
    return found


def request(
    sender_hash: str, requested_by: str, *, now: float, deadline_seconds: float, linked: Sequence[str] = ()
) -> JobRequest:
    """The job that erases the person `sender_hash` names, and every id `linked` to them. It has a
    deadline of its own, well past the lane's default expiry: an erasure delayed by a paused lane
    must still run."""
    if requested_by not in REQUESTED_BY:
        raise ValueError(f"requested_by must be one of {REQUESTED_BY}")
    payload: dict[str, Any] = {"sender_hash": sender_hash, "requested_by": requested_by}
    others = hashes_of(sender_hash, linked)[1:]
    if others:
        payload["linked"] = others
    return JobRequest(
        lane=LANE,
        kind=KIND,
        tenant=TENANT,
        payload=payload,
        payload_size=len(json.dumps(payload, separators=(",", ":"))),
        deadline=now + deadline_seconds,
        # The job's id is derived from the code (`job_id`); the code itself is not stored.
        idempotency_key=None,
    )


def _iso(epoch: float | None) -> str | None:
    if epoch is None:
        return None
    return datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def public_status(code: str, job: Job) -> dict[str, Any]:
    """What the person holding the code is shown: pending, done (or no data held) or failed, when,
    and once done how much was erased (counts by kind: nothing about what it was)."""
    if job.status == schema.RowStatus.QUEUED:
        status = PENDING
    elif job.status == schema.RowStatus.DONE:
        status = DONE if any((job.result or {}).values()) else NO_DATA_HELD
    else:  # failed, expired or abandoned: an operator is paged by the erasure lane's alarms
        status = FAILED
    return {
        "confirmation_code": code,
        "status": status,
        "requested_at": _iso(job.created_at),
        "completed_at": None if status == PENDING else _iso(job.updated_at),
        "erased": dict(job.result or {}) if status == DONE else None,
    }


def _kept(row: Mapping[str, Any], names: tuple[str, ...]) -> dict[str, Any]:
    return {name: row[name] for name in names if row.get(name) is not None}


def log_tombstone(row: Mapping[str, Any], *, now: float, expires_at: float) -> dict[str, Any]:
    """What is left of a webhook-log row: nothing of the body, nothing that names anyone."""
    return {
        schema.ID: row[schema.ID],
        **_kept(row, _LOG_ROW_KEPT),
        "status": schema.RowStatus.ERASED,
        ERASED_AT: now,
        schema.TTL: int(row.get(schema.TTL) or expires_at),
    }


def job_tombstone(row: Mapping[str, Any], *, now: float, expires_at: float) -> dict[str, Any]:
    """What is left of a job row: its status and times for `GET /jobs/{id}`, no payload, no
    idempotency key (a producer's key may name the person) and no error text."""
    return {
        schema.ID: row[schema.ID],
        **_kept(row, _JOB_ROW_KEPT),
        "status": schema.RowStatus.ERASED,
        "updated_at": now,
        "finished_at": now,
        ERASED_AT: now,
        schema.TTL: int(row.get(schema.TTL) or expires_at),
    }
