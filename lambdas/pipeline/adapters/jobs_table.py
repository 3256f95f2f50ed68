"""Job rows, and each tenant's count of queued jobs per lane, kept in step by transactions.

Job row (jobs table, key `id`): `lane`, `kind`, `tenant`, `status` ("queued" until terminal),
`attempts`, `deferrals`, `created_at`, `updated_at`, `deadline` (optional), `last_error`
(optional), `payload` (the JSON payload as a native DynamoDB value, as the sweeper replays it),
`replays`, `request_hash` and `idempotency_key` (when given), `sender_hash` (when the payload names
the person the job is about: domain/senders.person_in_job), `expires_at` (when DynamoDB's TTL
deletes it: the jobs retention, counted from the deadline when that is later), and while pending
`pending_shard`/`pending_since`, exactly as the webhook log.

Tenant counter (state table, `pk` = `jobs.queued_key(lane, tenant)` = `queued#<lane>#<tenant>`):
Number `jobs.QUEUED` = `queued`. `create` adds one in the same transaction that writes the job, on
condition it is under the limit, and moves the counter's `expires_at` to the new job's (a tenant
that stops submitting loses its counter with its last job's row). Whatever first makes the job
terminal must take one away in the same commit as that status change (the consumers' job
bookkeeping does), or the tenant's count only ever grows and the tenant is eventually refused for
good.
"""

from __future__ import annotations

from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from pipeline import schema
from pipeline.adapters import items
from pipeline.domain.jobs import requests as jobs
from pipeline.domain.jobs.requests import (
    Created,
    CreateResult,
    Duplicate,
    Job,
    JobRequest,
    JobsTableUnavailable,
    TenantLimited,
)
from pipeline.schema.jobs import CREATED_AT, DEADLINE, IDEMPOTENCY_KEY, PAYLOAD, REQUEST_HASH
from pipeline.schema.rows import (
    ATTEMPTS,
    DEFERRALS,
    ERROR_CLASS,
    KIND,
    LANE,
    LAST_ERROR,
    REPLAYS,
    RESULT,
    STATUS,
    TENANT,
    UPDATED_AT,
)


def _number(item: dict[str, Any], name: str) -> float | None:
    value = item.get(name)
    return None if value is None else float(value)


def _counts(item: dict[str, Any], name: str) -> dict[str, int] | None:
    counts = item.get(name)
    return {key: int(count) for key, count in counts.items()} if counts else None


def job_from_item(raw: dict[str, Any]) -> Job:
    item = items.from_item(raw) or {}
    return Job(
        id=item[schema.ID],
        lane=item.get(LANE) or "",
        kind=item.get(KIND) or "",
        tenant=item.get(TENANT) or "",
        status=item.get(STATUS) or "",
        attempts=int(_number(item, ATTEMPTS) or 0),
        deferrals=int(_number(item, DEFERRALS) or 0),
        created_at=_number(item, CREATED_AT) or 0.0,
        updated_at=_number(item, UPDATED_AT) or 0.0,
        deadline=_number(item, DEADLINE),
        last_error=item.get(LAST_ERROR),
        result=_counts(item, RESULT),
        error_class=item.get(ERROR_CLASS),
    )


def _row(job_id: str, request: JobRequest, now: float, expires_at: int, sender_hash: str | None) -> dict[str, Any]:
    # The request validation has already refused a payload DynamoDB cannot hold (jobs.parse_request).
    row: dict[str, Any] = {
        schema.ID: job_id,
        LANE: request.lane,
        KIND: request.kind,
        TENANT: request.tenant,
        STATUS: schema.RowStatus.QUEUED,
        ATTEMPTS: 0,
        DEFERRALS: 0,
        REPLAYS: 0,
        CREATED_AT: items.Milliseconds(now),
        UPDATED_AT: items.Milliseconds(now),
        PAYLOAD: request.payload,
        REQUEST_HASH: request.fingerprint,
        schema.PENDING_SHARD: schema.pending_shard(job_id),
        schema.PENDING_SINCE: items.Milliseconds(now),
        schema.TTL: expires_at,
    }
    if request.deadline is not None:
        row[DEADLINE] = items.Milliseconds(request.deadline)
    if sender_hash is not None:
        row[schema.SENDER_HASH] = sender_hash
    if request.idempotency_key is not None:
        row[IDEMPOTENCY_KEY] = request.idempotency_key
    return items.to_item(row)


class JobsTable:
    def __init__(self, dynamodb: Any, jobs_table: str, state_table: str) -> None:
        self._dynamodb = dynamodb
        self._jobs = jobs_table
        self._state = state_table

    def _counter(self, lane: str, tenant: str) -> dict[str, Any]:
        return items.key(schema.PK, jobs.queued_key(lane, tenant))

    def create(
        self,
        job_id: str,
        request: JobRequest,
        now: float,
        tenant_limit: int,
        expires_at: int,
        sender_hash: str | None = None,
    ) -> CreateResult:
        """Write the job and count it against its tenant, atomically: an existing id (the same
        idempotency key) or a tenant at its limit writes nothing. One TransactWriteItems."""
        writes = [
            {
                "Put": {
                    "TableName": self._jobs,
                    "Item": _row(job_id, request, now, expires_at, sender_hash),
                    "ConditionExpression": "attribute_not_exists(#id)",
                    "ExpressionAttributeNames": {"#id": schema.ID},
                    "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
                }
            },
            {
                "Update": {
                    "TableName": self._state,
                    "Key": self._counter(request.lane, request.tenant),
                    "UpdateExpression": "ADD #q :one SET #u = :now, #ttl = :ttl",
                    "ConditionExpression": "attribute_not_exists(#q) OR #q < :limit",
                    "ExpressionAttributeNames": {"#q": jobs.QUEUED, "#u": UPDATED_AT, "#ttl": schema.TTL},
                    "ExpressionAttributeValues": items.to_item(
                        {":one": 1, ":limit": tenant_limit, ":now": items.Milliseconds(now), ":ttl": expires_at}
                    ),
                }
            },
        ]
        try:
            self._dynamodb.transact_write_items(TransactItems=writes)
        except ClientError as exc:
            reasons = exc.response.get("CancellationReasons") or []
            codes = [reason.get("Code") for reason in reasons]
            if codes[:1] == ["ConditionalCheckFailed"]:
                # Checked first: a replay of an accepted job is not the tenant's limit talking.
                existing = reasons[0].get("Item")
                return Duplicate(
                    job=job_from_item(existing) if existing else None,
                    request_hash=items.read(existing, REQUEST_HASH) if existing else None,
                )
            if codes[1:2] == ["ConditionalCheckFailed"]:
                return TenantLimited()
            raise JobsTableUnavailable(f"job write failed: {exc}") from exc
        except BotoCoreError as exc:
            raise JobsTableUnavailable(f"job write failed: {exc}") from exc
        return Created()

    def mark_unsent(self, job_id: str, at: float) -> None:
        try:
            self._dynamodb.update_item(
                TableName=self._jobs,
                Key=items.key(schema.ID, job_id),
                UpdateExpression="SET #failed = :at",
                # Only while it is still waiting in the pending index: a job already finished (or
                # given up on) needs nothing from the sweeper.
                ConditionExpression="attribute_exists(#shard) AND #status = :queued",
                ExpressionAttributeNames={
                    "#failed": schema.SEND_FAILED_AT,
                    "#shard": schema.PENDING_SHARD,
                    "#status": STATUS,
                },
                ExpressionAttributeValues=items.to_item(
                    {":at": items.Milliseconds(at), ":queued": schema.RowStatus.QUEUED}
                ),
            )
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") == "ConditionalCheckFailedException":
                return
            raise JobsTableUnavailable(f"job not marked unsent: {exc}") from exc
        except BotoCoreError as exc:
            raise JobsTableUnavailable(f"job not marked unsent: {exc}") from exc

    def get(self, job_id: str) -> Job | None:
        try:
            # Strongly consistent: a client polling right after its 202 must find its job.
            item = self._dynamodb.get_item(
                TableName=self._jobs, Key=items.key(schema.ID, job_id), ConsistentRead=True
            ).get("Item")
        except (ClientError, BotoCoreError) as exc:
            raise JobsTableUnavailable(f"job read failed: {exc}") from exc
        return None if item is None else job_from_item(item)
