"""`lanectl meta check`: asks Meta which fields each Page, Instagram account or WhatsApp Business
Account is subscribed to, and flags what the pipeline routes but the subscription lacks.

Which accounts: every one the accounts table knows (the door stamps each account it hears from:
lambdas/pipeline/adapters/accounts_seen.py), with when its last delivery came and whether it is
one of the quiet accounts the `QuietAccounts` alarm counts, plus any named with `--page`,
`--instagram` or `--waba`; with `--tenant T`, only the accounts the environment binds to T
(Environment.tenant_assets), and naming another is refused. Each account shows the tenant it is
bound to. An id that is not a Meta id (1-20 digits) is refused when named, and one read from the
table is reported `not_a_meta_id` without being asked. Each is one `GET /{id}/subscribed_apps` to the Graph API
the deployed pipeline sends replies through (the sending lane's GRAPH_API_URL, or `--graph-url`),
with the `MetaAccessToken` secret's token (a system user's, as `lanectl preflight` checks); its
answer is set against `SUBSCRIBED_FIELDS` (lambdas/pipeline/domain/webhook/routing.py). A WhatsApp
account's fields are the app's, so for it only the app's subscription is checked.

Costs: one Query of the accounts table a MB (0.5 read unit per 4 KB), one GetSecretValue, one
GetFunctionConfiguration, and one Graph call per account (counted against the app's Graph API
rate limit, like any call made with its token). Reads only: nothing is subscribed or changed.

Exit codes: 0 every account subscribed with every field; 1 (FAILED) an account lacks fields or
the app's subscription; 6 (UNCHECKED) none lacks any, but something could not be checked (no
token, the token refused, Meta unreachable or down, an id Meta does not know); 2 bad input.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from ops.aws import describe_error
from ops.context import Context
from ops.errors import FAILED, OK, UNCHECKED, USAGE, OpsError
from ops.meta_graph import Graph, GraphRefused, GraphUnavailable
from ops.output import JSON, TEXT, duration, table
from pipeline.domain.webhook.routing import SUBSCRIBED_FIELDS
from pipeline.settings.tenant_assets import MAX_ID_DIGITS, is_meta_id

ACCOUNT_ID = re.compile(r"[0-9]{1,40}")
"""An app id's shape (the accounts' are is_meta_id's: settings/tenant_assets.py)."""
TOKEN_KEY = "access_token"  # noqa: S105 (the field's name, not a token)
GRAPH_VARIABLE = "GRAPH_API_URL"

OK_STATE, MISSING, NOT_SUBSCRIBED, UNKNOWN, AMBIGUOUS, UNAVAILABLE, NOT_AN_ID = (
    "ok",
    "missing_fields",
    "not_subscribed",
    "unknown_to_meta",
    "several_apps",
    "not_checked",
    "not_a_meta_id",
)
LACKING = (MISSING, NOT_SUBSCRIBED)
RESUBSCRIBE = {
    "page": "POST /{id}/subscribed_apps?subscribed_fields={fields} with the Page's access token",
    "instagram": "POST /{id}/subscribed_apps?subscribed_fields={fields} with the account's access token",
    "whatsapp": "POST /{id}/subscribed_apps with the system user's token",
}


@dataclass
class Checked:
    account: str
    product: str
    last_seen: float | None
    quiet: bool = False
    """An account that normally sends, quiet too long: what the QuietAccounts alarm counts."""
    state: str = UNAVAILABLE
    subscribed: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    detail: str = ""
    tenant: str | None = None
    """The tenant the environment binds the account to (Environment.tenant_assets); None: none."""


def _named(ids: list[str] | None, flag: str) -> list[str]:
    found = []
    for value in ids or []:
        if not is_meta_id(value):
            raise OpsError(
                f"{flag} {value!r} is not a Meta id (1-{MAX_ID_DIGITS} digits, as the app dashboard shows it)", USAGE
            )
        found.append(value)
    return found


def _tenants_own(ctx: Context, tenant: str, named: dict[str, str]) -> dict[str, str]:
    """The accounts `--tenant` checks: its bound Pages, Instagram accounts and WhatsApp Business
    Accounts; an account named beside it must be one of them (USAGE otherwise)."""
    owned = ctx.env.tenant_assets.tenants.get(tenant)
    if owned is None:
        raise OpsError(f"{ctx.env.name} binds no Meta assets to tenant {tenant!r} (Environment.tenant_assets)", USAGE)
    own = {
        **dict.fromkeys(owned.pages, "page"),
        **dict.fromkeys(owned.instagram, "instagram"),
        **dict.fromkeys(owned.waba, "whatsapp"),
    }
    foreign = sorted(account for account in named if account not in own)
    if foreign:
        raise OpsError(f"{', '.join(foreign)} not bound to tenant {tenant} in {ctx.env.name}: not checked", USAGE)
    return own


def _known(ctx: Context) -> tuple[dict[str, Checked], str]:
    """The accounts the door has stamped, and a note when there are none to read."""
    from pipeline.adapters.accounts_seen import AccountsSeen

    watch = ctx.env.accounts
    table_name = ctx.deployment().outputs.get("AccountsTableName")
    if watch is None or not table_name:
        return {}, f"{ctx.env.name} does not stamp source accounts; only the accounts named are checked"
    try:
        seen, _pages = AccountsSeen(ctx.aws.client("dynamodb"), table_name, watch.silence).read_all()
    except (BotoCoreError, ClientError) as exc:
        raise OpsError(f"cannot read {table_name}: {describe_error(exc)}", UNCHECKED) from exc
    now = ctx.clock()
    return {
        s.account: Checked(s.account, s.product or "page", s.last_seen, s.is_quiet(now, watch.silence)) for s in seen
    }, ""


def _token(ctx: Context) -> str:
    arn = ctx.deployment().outputs.get("MetaAccessTokenArn")
    if not arn:
        raise OpsError(f"{ctx.deployment().stack} has no MetaAccessTokenArn output: deploy the stack again", UNCHECKED)
    try:
        raw = ctx.aws.client("secretsmanager").get_secret_value(SecretId=arn)["SecretString"]
    except (BotoCoreError, ClientError) as exc:
        raise OpsError(
            f"could not check: cannot read the access token {arn}: {describe_error(exc)}", UNCHECKED
        ) from exc
    try:
        token = json.loads(raw).get(TOKEN_KEY)
    except (ValueError, AttributeError):
        token = None
    if not isinstance(token, str) or not token.strip():
        raise OpsError(
            f"could not check: {arn} holds no {TOKEN_KEY}; set it to a system user's token from Meta Business "
            "Manager (docs/RUNBOOK.md, Rotating the Meta access token)",
            UNCHECKED,
        )
    return token


def _graph_url(ctx: Context, flag: str | None) -> str:
    """The Graph API the deployed pipeline sends through: the sending lane's variable, as the
    deploy (or the local runtime, pointing it at its fake) set it."""
    if flag:
        return flag
    from stacks.runtime_env import SENDING_TASKS, lane_id

    for lane in ctx.env.lanes:
        if lane.policy.task not in SENDING_TASKS:
            continue
        name = ctx.deployment().outputs.get(f"{lane_id(lane.name)}FunctionName")
        if not name:
            continue
        try:
            variables = ctx.aws.client("lambda").get_function_configuration(FunctionName=name)["Environment"]
        except (BotoCoreError, ClientError, KeyError):
            continue
        url = (variables.get("Variables") or {}).get(GRAPH_VARIABLE)
        if url:
            return str(url)
    return ctx.env.graph_api_url


def _app_entry(entries: list[dict[str, Any]], product: str, app_id: str | None) -> dict[str, Any] | str | None:
    """Our app's entry in `data`; None when not subscribed; a message when it cannot be told."""

    def app_of(entry: dict[str, Any]) -> str:
        inner = entry.get("whatsapp_business_api_data") if product == "whatsapp" else entry
        return str(inner.get("id", "")) if isinstance(inner, dict) else ""

    if app_id is not None:
        return next((e for e in entries if app_of(e) == app_id), None)
    if len(entries) > 1:
        return f"{len(entries)} apps are subscribed ({', '.join(app_of(e) for e in entries)}): pass --app-id"
    return entries[0] if entries else None


def _check_one(graph: Graph, checked: Checked, app_id: str | None) -> None:
    try:
        entries = graph.subscribed_apps(checked.account)
    except GraphRefused as exc:
        if exc.code == 190:
            raise OpsError(
                f"could not check: Meta refused the access token (190: {exc.message}); rotate it "
                "(docs/RUNBOOK.md, Rotating the Meta access token)",
                UNCHECKED,
            ) from exc
        checked.state = UNKNOWN if exc.code == 100 else UNAVAILABLE
        checked.detail = str(exc)
        return
    entry = _app_entry(entries, checked.product, app_id)
    if isinstance(entry, str):
        checked.state, checked.detail = AMBIGUOUS, entry
        return
    needed = list(SUBSCRIBED_FIELDS.get(checked.product, ()))
    if entry is None:
        checked.state, checked.missing = NOT_SUBSCRIBED, needed
        return
    if checked.product == "whatsapp":
        checked.state, checked.detail = OK_STATE, "fields are the app's (its dashboard's Webhooks page)"
        return
    subscribed = entry.get("subscribed_fields")
    checked.subscribed = sorted(str(f) for f in subscribed) if isinstance(subscribed, list) else []
    checked.missing = [f for f in needed if f not in checked.subscribed]
    checked.state = MISSING if checked.missing else OK_STATE


def check(
    ctx: Context,
    *,
    pages: list[str] | None = None,
    instagram: list[str] | None = None,
    wabas: list[str] | None = None,
    app_id: str | None = None,
    graph_url: str | None = None,
    output: str = TEXT,
    tenant: str | None = None,
) -> int:
    named = {
        **dict.fromkeys(_named(pages, "--page"), "page"),
        **dict.fromkeys(_named(instagram, "--instagram"), "instagram"),
        **dict.fromkeys(_named(wabas, "--waba"), "whatsapp"),
    }
    if app_id is not None and not ACCOUNT_ID.fullmatch(app_id):
        raise OpsError(f"--app-id {app_id!r} is not a Meta app id (digits only)", USAGE)
    if tenant is not None:
        named = _tenants_own(ctx, tenant, named)
    accounts, note = _known(ctx)
    if tenant is not None:
        accounts = {account: checked for account, checked in accounts.items() if account in named}
    for account, product in named.items():
        known = accounts.get(account)
        accounts[account] = Checked(
            account, product, None if known is None else known.last_seen, known is not None and known.quiet
        )
    if not accounts:
        raise OpsError(
            f"no accounts to check in {ctx.deployment().stack}: none has delivered yet; name them with --page, "
            "--instagram or --waba",
            USAGE,
        )
    token = _token(ctx)
    url = _graph_url(ctx, graph_url)
    try:
        graph = Graph(url, token)
    except ValueError as exc:
        raise OpsError(f"--graph-url: {exc}", USAGE) from exc
    results = sorted(accounts.values(), key=lambda c: (c.product, c.account))
    for checked in results:
        checked.tenant = ctx.env.tenant_assets.owner_of(checked.account)
        if not is_meta_id(checked.account):
            # A stamped id the door could not vouch for never goes into a Graph URL.
            checked.state, checked.detail = NOT_AN_ID, f"not a Meta id (1-{MAX_ID_DIGITS} digits): not asked"
            continue
        try:
            _check_one(graph, checked, app_id)
        except GraphUnavailable as exc:
            # Meta is down or out of reach: every other account would wait for the same timeout.
            raise OpsError(f"could not check: the Graph API at {url} did not answer: {exc}", UNCHECKED) from exc
    code = (
        FAILED
        if any(c.state in LACKING for c in results)
        else UNCHECKED
        if any(c.state != OK_STATE for c in results)
        else OK
    )
    _show(ctx, results, url, note, output)
    return code


def _show(ctx: Context, results: list[Checked], url: str, note: str, output: str) -> None:
    now = ctx.clock()
    if output == JSON:
        ctx.console.json(
            {
                "graph_api": url,
                "accounts": [
                    {
                        "account": c.account,
                        "product": c.product,
                        "tenant": c.tenant,
                        "last_delivery_age_seconds": None if c.last_seen is None else round(now - c.last_seen, 3),
                        "quiet": c.quiet,
                        "state": c.state,
                        "subscribed_fields": c.subscribed,
                        "missing_fields": c.missing,
                        "detail": c.detail or None,
                    }
                    for c in results
                ],
                "note": note or None,
            }
        )
        return
    ctx.console.line(f"Meta subscriptions of {ctx.deployment().stack}'s source accounts (asked {url})")
    if note:
        ctx.console.line(f"({note})")
    ctx.console.table(
        table(
            ("ACCOUNT", "PRODUCT", "TENANT", "LAST DELIVERY", "STATE", "MISSING"),
            [
                (
                    c.account,
                    c.product,
                    c.tenant or "-",
                    "-" if c.last_seen is None else f"{duration(now - c.last_seen)} ago{' (quiet)' if c.quiet else ''}",
                    c.state,
                    ",".join(c.missing) or "-",
                )
                for c in results
            ],
        )
    )
    for c in results:
        if c.state in LACKING:
            fields = ",".join(SUBSCRIBED_FIELDS.get(c.product, ()))
            ctx.console.line(f"re-subscribe {c.account}: " + RESUBSCRIBE[c.product].format(id=c.account, fields=fields))
        elif c.detail and c.state != OK_STATE:
            ctx.console.line(f"{c.account}: {c.detail}")
    lacking = sum(c.state in LACKING for c in results)
    unchecked = sum(c.state not in (OK_STATE, *LACKING) for c in results)
    ctx.console.line(
        f"{len(results)} account(s): {len(results) - lacking - unchecked} subscribed as routed, {lacking} lacking, "
        f"{unchecked} not checked (docs/RUNBOOK.md, Webhooks disabled by Meta)"
    )
