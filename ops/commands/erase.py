"""`lanectl erase`: erase one person for on-call, the way Meta's data-deletion callback does.

The person is named by an id the pipeline stores (`--sender`: a WhatsApp phone number in
international form or business-scoped user id (BSUID, `US.1349...`; either finds what is stored
under the other once Meta sent both, lambdas/pipeline/tasks/erase.py), a Messenger page-scoped id,
an Instagram-scoped id, a comment author's id), or
by the app-scoped id Meta's callback sends (`--app-scoped-id`), which is erased with every id the
product linked to it (lambdas/pipeline/adapters/identity_links.py; `--link` adds a link). An id
nothing stored can be keyed by is refused, saying what to give instead.

Ids are hashed here with the environment's sender key, read from Secrets Manager with the
operator's credentials; only hashes leave this process, in an erasure job written to the jobs
table and sent to the erasure lane, exactly as the callback writes one
(lambdas/pipeline/adapters/erasure_requests.py). Nothing personal is printed. The confirmation code
is what the person, or a later `lanectl erase --status`, reads the result with.
"""

from __future__ import annotations

from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from ops.context import Context
from ops.errors import AWS, FAILED, OK, USAGE, OpsError
from ops.resolve import output_prefix
from pipeline.adapters.erasure_requests import ErasureRequests, ErasuresBusy
from pipeline.adapters.identity_links import IdentityLinks
from pipeline.adapters.jobs_table import JobsTable, JobsTableUnavailable
from pipeline.adapters.lane_queue import QueueSender
from pipeline.adapters.open_erasures import OpenErasures
from pipeline.adapters.sender_key import SenderKey, SenderKeyUnavailable
from pipeline.domain import retention, senders
from pipeline.domain.erasure import requests as erasure
from pipeline.domain.erasure.requests import IdentityLinksUnavailable
from pipeline.domain.senders import UnusableId
from stacks.config.privacy import DAY

POLL_SECONDS = 2.0


def _key(ctx: Context) -> SenderKey:
    return SenderKey(ctx.aws.client("secretsmanager"), ctx.deployment().output("SenderKeyArn"))


def _links(ctx: Context) -> IdentityLinks:
    return IdentityLinks(ctx.aws.client("dynamodb"), ctx.deployment().output("StateTableName"))


def _requests(ctx: Context, key: SenderKey) -> ErasureRequests:
    deployment = ctx.deployment()
    env = ctx.env
    dynamodb = ctx.aws.client("dynamodb")
    state = deployment.output("StateTableName")
    return ErasureRequests(
        JobsTable(dynamodb, deployment.output("JobsTableName"), state),
        QueueSender(ctx.aws.client("sqs")),
        deployment.output(output_prefix(erasure.LANE) + "QueueUrl"),
        open_erasures=OpenErasures(dynamodb, state),
        code_key=lambda: _read_key(key),
        queued_limit=env.jobs.settings.tenant_queued_limit,
        deadline_seconds=env.erasure.deadline_days * DAY,
        keep_seconds=env.retention.erasure_requests_days * DAY,
    )


SENDER_HELP = (
    "a WhatsApp phone number in international form (+44 7700 900123) or business-scoped user id "
    "(US.13491208655302741918), or a Messenger page-scoped, Instagram-scoped or comment author's id"
)


def _read_key(key: SenderKey) -> bytes:
    try:
        return key.key()
    except SenderKeyUnavailable as exc:
        raise OpsError(f"{exc}; check this stack's SenderKey secret and your access to it", AWS) from exc


def _hash(key: SenderKey, option: str, value: str | None) -> str:
    if value is None or not value.strip():
        raise OpsError(f"give the person as --sender ({SENDER_HELP}) or --app-scoped-id", USAGE)
    try:
        usable = senders.usable_id(value)
    except UnusableId as exc:
        raise OpsError(f"{option}: {exc}", USAGE) from exc
    return senders.sender_hash(_read_key(key), usable)


def _linked(ctx: Context, app_scoped_hash: str) -> tuple[str, ...]:
    try:
        return _links(ctx).resolve(app_scoped_hash)
    except IdentityLinksUnavailable as exc:
        raise OpsError(f"{exc}; check your access to this stack's state table", AWS) from exc


def _who(
    ctx: Context, key: SenderKey, sender: str | None, sender_hash: str | None, app_scoped_id: str | None
) -> tuple[str, tuple[str, ...]]:
    """The hash asked for and the hashes linked to it."""
    if sender_hash is not None:
        if not senders.is_hash(sender_hash):
            raise OpsError(f"--sender-hash must be {senders.HASH_HEX_DIGITS} lowercase hex digits", USAGE)
        return sender_hash, _linked(ctx, sender_hash)
    if app_scoped_id is None:
        return _hash(key, "--sender", sender), ()
    hashed = _hash(key, "--app-scoped-id", app_scoped_id)
    linked = _linked(ctx, hashed)
    if not linked:
        raise OpsError(
            "no ids are linked to this app-scoped id, and nothing the pipeline stores is keyed by one: "
            f"give the person's --sender ({SENDER_HELP}), or link it first with --link",
            USAGE,
        )
    return hashed, linked


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


def erase(
    ctx: Context,
    *,
    sender: str | None,
    sender_hash: str | None,
    wait_seconds: float,
    app_scoped_id: str | None = None,
) -> int:
    key = _key(ctx)
    hashed, linked = _who(ctx, key, sender, sender_hash, app_scoped_id)
    requests = _requests(ctx, key)
    if linked:
        ctx.console.line(f"erasing the id asked for and {len(linked)} linked to it")
    try:
        requested = requests.request(hashed, erasure.OPERATOR, now=ctx.clock(), linked=linked)
    except ErasuresBusy as exc:
        raise OpsError(f"{exc}: wait for the erasure lane to work through them, then try again", FAILED) from exc
    except (JobsTableUnavailable, ClientError, BotoCoreError) as exc:
        raise OpsError(f"the erasure could not be written: {exc}", AWS) from exc
    if requested.repeated:
        ctx.console.line(f"an erasure of this person is already pending: confirmation code {requested.code}")
    else:
        ctx.console.line(f"erasure requested: confirmation code {requested.code}")
    if not requested.sent:
        ctx.console.line("its message could not be sent; the sweeper sends it after its grace period")
    return _wait(ctx, requests, requested.code, wait_seconds)


def status(ctx: Context, code: str) -> int:
    if not erasure.is_code(code):
        raise OpsError(f"a confirmation code is {erasure.CODE_HEX_DIGITS} lowercase hex digits", USAGE)
    shown = _requests(ctx, _key(ctx)).status(code)
    if shown is None:
        raise OpsError(f"no erasure has the code {code} (or it is past its retention)", FAILED)
    _show(ctx, shown)
    return FAILED if shown["status"] == erasure.FAILED else OK


def link(ctx: Context, *, app_scoped_id: str, to: list[str] | None) -> int:
    """Link an app-scoped id to the ids the pipeline stores for the same person, so an erasure
    asked for by the app-scoped id (Meta's callback) erases them too."""
    if not to:
        raise OpsError(f"--link needs at least one --to ({SENDER_HELP})", USAGE)
    key = _key(ctx)
    app_scoped = _hash(key, "--link", app_scoped_id)
    hashes = [_hash(key, "--to", value) for value in to]
    expires_at = retention.expiry(ctx.clock(), ctx.env.retention.effects_days * DAY)
    try:
        _links(ctx).link(app_scoped, hashes, expires_at=expires_at)
    except ValueError as exc:
        raise OpsError(str(exc), USAGE) from exc
    except IdentityLinksUnavailable as exc:
        raise OpsError(f"{exc}; check your access to this stack's state table", AWS) from exc
    ctx.console.line(f"linked {len(set(hashes) - {app_scoped})} ids to the app-scoped id")
    return OK
