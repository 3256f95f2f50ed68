"""The jobs API's rules that need no AWS: what a valid job request is, job ids, idempotency, the
per-tenant queued counter's key, and what `GET /jobs/{id}` shows."""

from __future__ import annotations

import hashlib
import json
import re
import uuid
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Any

from pipeline.domain import strict_json
from pipeline.domain.envelope import INLINE_PAYLOAD_LIMIT, Envelope
from pipeline.settings import tenant_ids

JOB_ID_PREFIX = "job-"
SOURCE = "job"
FIELDS = ("lane", "kind", "tenant", "payload", "deadline")
MAX_DEADLINE_AHEAD_SECONDS = 366 * 24 * 3600
"""Further out is almost always milliseconds sent as seconds; refusing it catches the bug."""
QUEUED_PREFIX = "queued#"
QUEUED = "queued"
"""Number attribute on a tenant's counter item: that tenant's jobs on the lane not yet terminal."""
RESERVED_KIND_PREFIX = "privacy."
"""Kinds the pipeline makes itself (an erasure, domain/erasure/requests.py); the jobs API refuses them."""
RESERVED_TENANT = "privacy"
"""The erasures' tenant (domain/erasure/requests.py): its queued limit is what keeps Meta's callbacks
answered, so no producer may spend it."""

# The job row stores the payload as a native DynamoDB value (the sweeper replays it from there),
# so it must fit DynamoDB's document limits. The row itself is one level, leaving 31 for payload.
MAX_PAYLOAD_DEPTH = 31
MAX_NUMBER_DIGITS = 38
MIN_NUMBER = 1e-130
MAX_NUMBER = 9.9999999999999999999999999999999999999e125

_JOB_ID = re.compile(r"job-[0-9a-f]{32}")
_KIND = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:-]{0,63}")
_IDEMPOTENCY_KEY = re.compile(r"[\x21-\x7e]{1,255}")
_SQS_UNSAFE = re.compile("[\ufffe\uffff]")
"""SQS refuses these in a message body; JSON may carry them, so they are refused at the door."""


class InvalidJob(ValueError):
    """A request the API refuses; the message says what to fix."""

    status = 400


class PayloadTooLarge(InvalidJob):
    status = 413


@dataclass(frozen=True)
class JobRequest:
    lane: str
    kind: str
    tenant: str
    payload: Any
    payload_size: int
    """Bytes of the payload as compact JSON: what the size limit and the inline choice measure."""
    deadline: float | None
    idempotency_key: str | None

    @property
    def fingerprint(self) -> str:
        """What an idempotency key promises stays the same. The deadline is left out: a client
        retrying with a freshly computed deadline is still asking for the same job."""
        canonical = json.dumps([self.lane, self.kind, self.payload], sort_keys=True, ensure_ascii=False)
        return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def job_id(tenant: str, idempotency_key: str | None) -> str:
    """Deterministic for an idempotency key (scoped to the tenant, so two tenants' keys never
    collide), random otherwise."""
    if idempotency_key is None:
        return JOB_ID_PREFIX + uuid.uuid4().hex
    digest = hashlib.sha256(f"{tenant}\x00{idempotency_key}".encode()).hexdigest()
    return JOB_ID_PREFIX + digest[:32]


def is_job_id(value: str) -> bool:
    return _JOB_ID.fullmatch(value) is not None


def queued_key(lane: str, tenant: str) -> str:
    """State-table `pk` of a tenant's queued-job counter on a lane, e.g. `queued#bulk#acme`."""
    return f"{QUEUED_PREFIX}{lane}#{tenant}"


def _load_object(raw: bytes) -> dict[str, Any]:
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InvalidJob("body is not valid UTF-8") from exc
    try:
        body = strict_json.loads(text)
    except RecursionError as exc:
        raise InvalidJob("body nests too deeply") from exc
    except ValueError as exc:
        raise InvalidJob(f"body is not valid JSON: {exc}") from exc
    if not isinstance(body, dict):
        raise InvalidJob("body must be a JSON object with lane, kind, tenant and payload")
    return body


def _unstorable(payload: Any) -> str | None:
    """Why DynamoDB would refuse `payload` as a row attribute, or None. Checked here so that a
    bad payload is the caller's 400 rather than our 500."""
    stack: list[tuple[Any, int]] = [(payload, 1)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, dict | list):
            if depth > MAX_PAYLOAD_DEPTH:
                return f"payload nests deeper than {MAX_PAYLOAD_DEPTH} levels"
            children = node.values() if isinstance(node, dict) else node
            stack.extend((child, depth + 1) for child in children)
        elif isinstance(node, int) and not isinstance(node, bool):
            if len(str(abs(node))) > MAX_NUMBER_DIGITS:
                return f"payload holds an integer longer than {MAX_NUMBER_DIGITS} digits"
        elif isinstance(node, float) and node != 0 and not MIN_NUMBER <= abs(node) <= MAX_NUMBER:
            return "payload holds a number outside DynamoDB's range (1e-130 to 9.9e125)"
    return None


def _payload_size(payload: Any, limit: int) -> int:
    try:
        text = json.dumps(payload, ensure_ascii=False, separators=(",", ":"))
        size = len(text.encode("utf-8"))
    except UnicodeEncodeError as exc:
        raise InvalidJob("payload holds a lone surrogate escape, which has no UTF-8 form") from exc
    except RecursionError as exc:
        raise InvalidJob("payload nests too deeply") from exc
    if _SQS_UNSAFE.search(text):
        raise InvalidJob("payload holds U+FFFE or U+FFFF, which a queue message cannot carry")
    if size > limit:
        raise PayloadTooLarge(f"payload is {size} bytes; the limit is {limit}")
    problem = _unstorable(payload)
    if problem is not None:
        raise InvalidJob(problem)
    return size


def _deadline(value: Any, now: float, problems: list[str]) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        problems.append("deadline must be a number (epoch seconds)")
        return None
    deadline = float(value)
    if deadline <= now:
        problems.append("deadline is in the past")
    elif deadline > now + MAX_DEADLINE_AHEAD_SECONDS:
        problems.append("deadline is more than a year away (epoch seconds, not milliseconds)")
    return deadline


def parse_request(
    raw: bytes,
    idempotency_key: str | None,
    *,
    lanes: Collection[str],
    max_payload_bytes: int,
    now: float,
) -> JobRequest:
    """Validate a `POST /jobs` body. Raises InvalidJob naming every problem found."""
    body = _load_object(raw)
    problems: list[str] = []
    unknown = sorted(set(body) - set(FIELDS))
    if unknown:
        problems.append(f"unknown fields: {', '.join(unknown)}")
    lane = body.get("lane")
    if not isinstance(lane, str) or lane not in lanes:
        problems.append(f"lane must be one of: {', '.join(sorted(lanes))}")
    kind = body.get("kind")
    if not isinstance(kind, str) or _KIND.fullmatch(kind) is None:
        problems.append("kind must be 1-64 letters, digits, '_', '.', ':' or '-', starting with a letter or digit")
    elif kind.startswith(RESERVED_KIND_PREFIX):
        problems.append(
            f"kinds {RESERVED_KIND_PREFIX}* are the pipeline's own: an erasure is asked for through Meta's "
            "data-deletion callback or `lanectl erase`"
        )
    tenant = body.get("tenant")
    if not tenant_ids.is_valid(tenant):
        problems.append(f"tenant must be 1-{tenant_ids.MAX_LENGTH} letters, digits, '_', '.', ':', '@' or '-'")
    elif tenant == RESERVED_TENANT:
        problems.append(f"tenant {RESERVED_TENANT} is the pipeline's own (erasures); use the tenant the job is for")
    if body.get("payload") is None:
        problems.append("payload is required (any JSON value but null)")
    deadline = _deadline(body.get("deadline"), now, problems)
    if idempotency_key is not None and _IDEMPOTENCY_KEY.fullmatch(idempotency_key) is None:
        problems.append("Idempotency-Key must be 1-255 visible ASCII characters")
    if problems:
        raise InvalidJob("; ".join(problems))
    payload = body["payload"]
    return JobRequest(
        lane=str(lane),
        kind=str(kind),
        tenant=str(tenant),
        payload=payload,
        payload_size=_payload_size(payload, max_payload_bytes),
        deadline=deadline,
        idempotency_key=idempotency_key,
    )


@dataclass(frozen=True)
class Job:
    """A job row as `GET /jobs/{id}` shows it (the payload is the caller's own, and not echoed)."""

    id: str
    lane: str
    kind: str
    tenant: str
    status: str
    attempts: int
    deferrals: int
    created_at: float
    updated_at: float
    deadline: float | None
    last_error: str | None
    """As the row keeps it, `<reason>: <text>`: the text is for operators only (to_public)."""
    result: Mapping[str, int] | None = None
    """The task's counts, once done (TaskResult.result); None before, or when it reported none."""
    error_class: str | None = None

    @property
    def error_reason(self) -> str | None:
        """The short reason of the last error, without its text: an AWS error's text names roles,
        tables and accounts, and an exception's may quote the payload."""
        if self.last_error is None:
            return None
        return self.last_error.split(":", 1)[0].strip() or None

    def to_public(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "lane": self.lane,
            "kind": self.kind,
            "tenant": self.tenant,
            "status": self.status,
            "attempts": self.attempts,
            "deferrals": self.deferrals,
            "created_at": self.created_at,
            "updated_at": self.updated_at,
            "deadline": self.deadline,
            "last_error": self.error_reason,
            "error_class": self.error_class,
            "result": None if self.result is None else dict(self.result),
        }


def envelope(job_id: str, request: JobRequest, now: float) -> Envelope:
    """The message for a written job: payload inline when it fits, else `ref` to the row."""
    inline = request.payload_size <= INLINE_PAYLOAD_LIMIT
    return Envelope(
        id=job_id,
        lane=request.lane,
        tenant=request.tenant,
        kind=request.kind,
        source=SOURCE,
        created_at=now,
        deadline=request.deadline,
        payload=request.payload if inline else None,
        ref=None if inline else job_id,
    )


class JobsTableUnavailable(RuntimeError):
    """DynamoDB did not answer; nothing is known to have been written."""


@dataclass(frozen=True)
class Created:
    pass


@dataclass(frozen=True)
class Duplicate:
    job: Job | None
    """The job already holding this id (None if DynamoDB did not return it)."""
    request_hash: str | None


@dataclass(frozen=True)
class TenantLimited:
    pass


CreateResult = Created | Duplicate | TenantLimited
