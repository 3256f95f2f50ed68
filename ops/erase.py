"""`lanectl erase`: erase one person for on-call, the way Meta's data-deletion callback does.

The person's id (a phone number or one of Meta's ids) is hashed here with the environment's sender
key, read from Secrets Manager with the operator's credentials; only the hash leaves this process,
in an erasure job written to the jobs table and sent to the erasure lane, exactly as the callback
writes one (lambdas/pipeline/adapters/erasure_requests.py). Nothing personal is printed. The
confirmation code is what the person, or a later `lanectl erase --status`, reads the result with.
"""

from __future__ import annotations

from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from ops.context import Context
from ops.errors import AWS, FAILED, OK, USAGE, OpsError
from ops.resolve import output_prefix
from pipeline.adapters.erasure_requests import ErasureRequests, ErasuresBusy
from pipeline.adapters.jobs_table import JobsTable, JobsTableUnavailable
from pipeline.adapters.lane_queue import QueueSender
from pipeline.adapters.sender_key import SenderKey, SenderKeyUnavailable
from pipeline.domain import erasure, senders
from stacks.config.privacy import DAY

POLL_SECONDS = 2.0


def _requests(ctx: Context) -> ErasureRequests:
    deployment = ctx.deployment()
    env = ctx.env
    return ErasureRequests(
        JobsTable(ctx.aws.client("dynamodb"), deployment.output("JobsTableName"), deployment.output("StateTableName")),
        QueueSender(ctx.aws.client("sqs")),
        deployment.output(output_prefix(erasure.LANE) + "QueueUrl"),
        queued_limit=env.jobs.tenant_queued_limit,
        deadline_seconds=env.erasure.deadline_days * DAY,
        keep_seconds=env.retention.erasure_requests_days * DAY,
    )


def _hash_of(ctx: Context, sender: str | None, sender_hash: str | None) -> str:
    if sender_hash is not None:
        if not senders.is_hash(sender_hash):
            raise OpsError(f"--sender-hash must be {senders.HASH_HEX_DIGITS} lowercase hex digits", USAGE)
        return sender_hash
    if sender is None or not senders.normalise(sender):
        raise OpsError("give the person as --sender (a phone number in international form, or a Meta id)", USAGE)
    key = SenderKey(ctx.aws.client("secretsmanager"), ctx.deployment().output("SenderKeyArn"))
    try:
        return key.hash(sender)
    except SenderKeyUnavailable as exc:
        raise OpsError(f"{exc}; check this stack's SenderKey secret and your access to it", AWS) from exc


def _show(ctx: Context, shown: dict[str, Any]) -> None:
    when = f"requested {shown['requested_at']}"
    if shown.get("completed_at"):
        when += f", completed {shown['completed_at']}"
    ctx.console.line(f"status: {shown['status']} ({when})")
    erased = shown.get("erased")
    if erased:
        ctx.console.line(
            "erased: " + ", ".join(f"{kind.replace('_', ' ')} {count}" for kind, count in sorted(erased.items()))
        )


def _wait(ctx: Context, requests: ErasureRequests, code: str, wait_seconds: float) -> int:
    deadline = ctx.clock() + wait_seconds
    shown = requests.status(code)
    while shown is not None and shown["status"] == erasure.PENDING and ctx.clock() < deadline:
        ctx.sleep(POLL_SECONDS)
        shown = requests.status(code)
    if shown is None:
        raise OpsError(f"the erasure {code} was written but cannot be read back", FAILED)
    _show(ctx, shown)
    if shown["status"] == erasure.PENDING:
        ctx.console.line(f"still pending; check later with: lanectl erase --env {ctx.env.name} --status {code}")
    return FAILED if shown["status"] == erasure.FAILED else OK


def erase(ctx: Context, *, sender: str | None, sender_hash: str | None, wait_seconds: float) -> int:
    hashed = _hash_of(ctx, sender, sender_hash)
    requests = _requests(ctx)
    try:
        requested = requests.request(hashed, erasure.OPERATOR, now=ctx.clock())
    except ErasuresBusy as exc:
        raise OpsError(f"{exc}: wait for the erasure lane to work through them, then try again", FAILED) from exc
    except (JobsTableUnavailable, ClientError, BotoCoreError) as exc:
        raise OpsError(f"the erasure could not be written: {exc}", AWS) from exc
    ctx.console.line(f"erasure requested: confirmation code {requested.code}")
    if not requested.sent:
        ctx.console.line("its message could not be sent; the sweeper sends it after its grace period")
    return _wait(ctx, requests, requested.code, wait_seconds)


def status(ctx: Context, code: str) -> int:
    if not erasure.is_code(code):
        raise OpsError(f"a confirmation code is {erasure.CODE_HEX_DIGITS} lowercase hex digits", USAGE)
    shown = _requests(ctx).status(code)
    if shown is None:
        raise OpsError(f"no erasure has the code {code} (or it is past its retention)", FAILED)
    _show(ctx, shown)
    return FAILED if shown["status"] == erasure.FAILED else OK
