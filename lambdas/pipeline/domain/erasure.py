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

import json
import re
import secrets
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from pipeline import schema
from pipeline.domain import jobs
from pipeline.domain.jobs import Job, JobRequest

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
FAILED = "failed"

_LOG_ROW_KEPT = ("lane", "tenant", "kind", "received_at")
_JOB_ROW_KEPT = ("lane", "tenant", "kind", "created_at", "deadline", "attempts", "deferrals")
ERASED_AT = "erased_at"


class ErasuresBusy(RuntimeError):
    """As many erasures are queued as the lane lets one tenant queue: try again later."""


@dataclass(frozen=True)
class Requested:
    code: str
    job_id: str
    sent: bool
    """False when the send failed: the row is pending, and the sweeper sends it."""


def new_code(token_hex: Callable[[int], str] = secrets.token_hex) -> str:
    return token_hex(CODE_HEX_DIGITS // 2)


def is_code(value: object) -> bool:
    return isinstance(value, str) and _CODE.fullmatch(value) is not None


def job_id(code: str) -> str:
    return jobs.job_id(TENANT, code)


def request(sender_hash: str, requested_by: str, *, now: float, deadline_seconds: float) -> JobRequest:
    """The job that erases the person `sender_hash` names. It has a deadline of its own, well past
    the lane's default expiry: an erasure delayed by a paused lane must still run."""
    if requested_by not in REQUESTED_BY:
        raise ValueError(f"requested_by must be one of {REQUESTED_BY}")
    payload = {"sender_hash": sender_hash, "requested_by": requested_by}
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
    """What the person holding the code is shown: pending, done or failed, when, and once done how
    much was erased (counts by kind: nothing about what it was)."""
    if job.status == schema.RowStatus.QUEUED:
        status = PENDING
    elif job.status == schema.RowStatus.DONE:
        status = DONE
    else:  # failed, expired or abandoned: an operator is paged by the erasure lane's alarms
        status = FAILED
    return {
        "confirmation_code": code,
        "status": status,
        "requested_at": _iso(job.created_at),
        "completed_at": None if status == PENDING else _iso(job.updated_at),
        "erased": dict(job.result) if status == DONE and job.result else None,
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
