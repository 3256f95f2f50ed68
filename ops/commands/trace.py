"""`lanectl trace ID`: one delivery's or job's path, read from what the pipeline wrote about it.

From a webhook-log id (`wh-<sha256>`) or a job id (`job-<32 hex>`): when the door or the jobs API
took it, its lane, tenant and kind, the consumer's marks (attempts, the last error and its class,
deferrals), the sweeper's (a failed send noted, the replays), where it ended (done, failed to the
DLQ, expired, abandoned, erased), and for a delivery each unit its body holds with the effect the
messages or engagement task stored for it, or that nothing is stored.

Reads only, and no scan given a row's id: the row by its key (one consistent GetItem), a body in parts one more
GetItem a part, the sender key once (a webhook lane's items are keyed by the person's hash), and
one GetItem per unit on the data table. Who and what a unit is about (phone numbers, names, text)
is shown only with `--show-personal`; ids are not personal and are always shown.

From Meta's id of a stored unit, a WhatsApp message id (`wamid.…`), a Messenger or Instagram one
(`m_…`) or a comment id (`<post>_<comment>`): a Scan of the webhook log and the jobs table finds
the delivery or job that carried it (ops/commands/meta_id_search.py says why there is no index and
what the Scan costs: about what a listing costs), then the trace goes on from that row as above.
`--tenant` and `--since`/`--until` narrow what the Scan returns, not what it reads. A status
(keyed by the business's own message) is not searched: trace its delivery's wh- id instead.

Cost in read units: the row 1 (a consistent GetItem of up to 4 KB), a body part 1 each, a unit's
item 1 each; a Meta id adds the Scan.

From the SQS message id of a dead letter (what `lanectl dlq peek` shows, a UUID; `--lane` narrows
the search to that lane's DLQ): the DLQ is received until the message is met and everything
received is made visible again at once (ops/commands/dead_letter.py says what that costs: about a
receive and a visibility change per ten messages on the DLQ, nothing deleted, nothing hidden for
more than 10 s); its reason attributes (reason, error class, error, attempts) head the trace, which
goes on from the delivery's or job's id the message carries.

For an `ai.inbound` job (a customer's message a turn answers), the turn's reply follows the path:
what became of it, its attempts, Meta's message id and each status Meta sent for it
(ops/commands/trace_reply.py; one GetItem more).

A webhook row whose task finished stays `queued` (its effects are its done-mark: domain/consumer/marks.py),
so for a delivery the units' items are what says it was processed.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from ops.aws import describe_error
from ops.commands import trace_reply
from ops.context import Context
from ops.errors import AWS, USAGE, OpsError
from ops.log_selection import DEFAULT_SEGMENTS, JOB, WEBHOOK, Selection
from ops.output import JSON, TEXT
from pipeline.adapters.items import from_item
from pipeline.domain.consumer import marks
from pipeline.schema.jobs import CREATED_AT
from pipeline.schema.rows import REPLAYS, STATUS, TENANT
from pipeline.schema.webhook_log import RECEIVED_AT
from pipeline.tasks.ai import INBOUND

WEBHOOK_ID = re.compile(r"wh-[0-9a-f]{64}")
JOB_ID = re.compile(r"job-[0-9a-f]{32}")
MESSAGE_ID = re.compile(r"(wamid\.|m_)[A-Za-z0-9+/=_.-]{1,400}")
COMMENT_ID = re.compile(r"[0-9]{1,40}_[0-9]{1,40}")
HIDDEN = "(personal: --show-personal)"
_TABLE_OUTPUTS = {WEBHOOK: "WebhookTableName", JOB: "JobsTableName"}


@dataclass
class Unit:
    kind: str
    """message, status or comment."""
    id: str
    person: str
    stored: Mapping[str, Any] | None
    """The data item the task wrote for it, or None."""


@dataclass
class Trace:
    source: str
    """webhook or job."""
    id: str
    row: Mapping[str, Any]
    units: list[Unit] = field(default_factory=list)
    reply: dict[str, Any] | None = None
    """For an ai.inbound job: what its turn's reply became (ops/commands/trace_reply.py)."""
    reads: dict[str, int] = field(default_factory=dict)
    """Calls made, by table or service: what the trace cost."""

    def read(self, what: str) -> None:
        self.reads[what] = self.reads.get(what, 0) + 1


def _iso(value: Any) -> str | None:
    try:
        return datetime.fromtimestamp(float(value), UTC).isoformat(timespec="seconds")
    except (TypeError, ValueError):
        return None


def _get(ctx: Context, trace: Trace, table_output: str, key: Mapping[str, Any]) -> dict[str, Any] | None:
    from pipeline.adapters.items import to_item

    table = ctx.deployment().output(table_output)
    trace.read(table_output)
    try:
        found = ctx.aws.client("dynamodb").get_item(TableName=table, Key=to_item(dict(key)), ConsistentRead=True)
    except (BotoCoreError, ClientError) as exc:
        raise OpsError(f"cannot read {table}: {describe_error(exc)}", AWS) from exc
    item = found.get("Item")
    return None if item is None else from_item(item)


def _delivery_of(ctx: Context, trace: Trace, kind: str, meta_id: str, window: Selection, segments: int) -> str:
    """The wh- (or job-) id of the delivery that carried Meta's unit `meta_id` (the oldest, when
    Meta sent it again: the first stored it)."""
    from ops.commands import meta_id_search

    what = meta_id_search.MESSAGE if kind == "msg" else meta_id_search.COMMENT
    found, selected = meta_id_search.carriers(ctx, what, meta_id, window, segments)
    for source, reads in selected.reads.items():
        trace.reads[f"{_TABLE_OUTPUTS[source]} Scan pages"] = reads.pages
    if not found:
        raise OpsError(
            f"no delivery or job carrying the {what} {meta_id} in {ctx.deployment().stack} ({window.describe()}): "
            "not delivered, or past the raw log's retention",
            USAGE,
        )
    return found[0].id


def _units(ctx: Context, trace: Trace) -> None:
    """Each message, status and comment of the delivery's body, with what the task stored for it."""
    import json

    from pipeline.adapters.sender_key import SenderKey
    from pipeline.adapters.webhook_log import WebhookLog
    from pipeline.tasks import meta
    from pipeline.tasks.messages import comment_key, message_key, status_key

    deployment = ctx.deployment()
    tenant = str(trace.row.get(TENANT) or "")
    if not tenant or trace.row.get(STATUS) in ("unparseable", "erased"):
        return
    log = WebhookLog(ctx.aws.client("dynamodb"), deployment.output("WebhookTableName"))
    parts = int(trace.row.get("body_parts") or 1)
    for _ in range(parts):
        trace.read("WebhookTableName")
    try:
        body = log.load_body(trace.id)
        units = meta.read(json.loads(body))
    except Exception as exc:  # a body the door stored but no task could read: say so, read nothing more
        trace.units.append(Unit("unreadable body", type(exc).__name__, "", None))
        return
    sender_key = SenderKey(ctx.aws.client("secretsmanager"), deployment.output("SenderKeyArn"))
    trace.read("secretsmanager")
    found: list[tuple[str, str, str, dict[str, str]]] = []
    # Each unit is stored under its own entry's business, which in a batch of several is not the row's.
    for m in units.messages:
        key = message_key(meta.tenant_of(m, tenant), m.id, sender_key.hash(m.person))
        found.append(("message", m.id, m.person, key))
    for s in units.statuses:
        key = status_key(meta.tenant_of(s, tenant), s.message_id, sender_key.hash(s.recipient))
        found.append(("status", s.message_id, s.recipient, key))
    for c in units.comments:
        key = comment_key(meta.tenant_of(c, tenant), c.id, sender_key.hash(c.author))
        found.append(("comment", c.id, c.author, key))
    for kind, unit_id, person, key in found:
        trace.units.append(Unit(kind, unit_id, person, _get(ctx, trace, "DataTableName", key)))


def _reply(ctx: Context, trace: Trace, personal: bool) -> None:
    key = trace_reply.reply_key(trace.row)
    if key is None:
        trace.reply = {"outcome": "its payload names no conversation or message_id: no reply to find"}
        return
    trace.reply = trace_reply.view(_get(ctx, trace, "DataTableName", key), personal)


def _path(trace: Trace) -> list[tuple[str, str]]:
    """(step, what the row says), in the order the pipeline wrote them."""
    row = trace.row
    steps: list[tuple[str, str]] = []
    taken = row.get(RECEIVED_AT) if trace.source == "webhook" else row.get(CREATED_AT)
    door = "the door" if trace.source == "webhook" else "the jobs API"
    steps.append(("taken", f"{_iso(taken) or '?'} by {door}"))
    steps.append(("lane", f"{row.get('lane', '-')} (tenant {row.get('tenant', '-')}, kind {row.get('kind', '-')})"))
    if row.get("unparseable_reason"):
        steps.append(("unparseable", str(row["unparseable_reason"])))
    if row.get("send_failed_at") or row.get("pending_since"):
        noted = _iso(row.get("send_failed_at") or row.get("pending_since"))
        steps.append(("send failed", f"noted {noted}: waiting for the sweeper to replay it"))
    if row.get(REPLAYS):
        steps.append(("sweeper", f"replayed {row['replays']} time(s)"))
    if row.get("generation"):
        steps.append(("replay", f"finished by replay generation {row['generation']} (lanectl replay)"))
    # A finished row records the attempt that finished it; any other, the attempts that failed.
    attempts = int(row.get(marks.ATTEMPTS) or 0) - (1 if row.get(STATUS) == "done" else 0)
    if attempts > 0:
        steps.append(("attempts", f"{attempts} failed attempt(s)"))
    if row.get(marks.DEFERRALS):
        steps.append(("deferrals", f"{row[marks.DEFERRALS]} (deferred without spending an attempt)"))
    if row.get(marks.LAST_ERROR):
        reason = str(row[marks.LAST_ERROR]).split(":", 1)[0]
        steps.append(("last error", f"{reason} ({row.get(marks.ERROR_CLASS, '?')})"))
    status = str(row.get(STATUS, "?"))
    ended = {
        "failed": "dead-lettered: its message is in the lane's DLQ (lanectl dlq peek LANE)",
        "abandoned": "abandoned by the sweeper after repeated replays",
        "expired": "expired before it was processed",
        "erased": "erased by an erasure request",
        "done": "done",
        "unparseable": "kept for inspection, never enqueued",
    }.get(status)
    if ended is None and trace.source == "webhook":
        stored = sum(1 for u in trace.units if u.stored is not None)
        ended = (
            f"processed: {stored} of {len(trace.units)} unit(s) stored"
            if stored
            else "queued: not processed yet, or its units stored nothing"
        )
    steps.append(("status", ended or status))
    updated = row.get(marks.UPDATED_AT) or row.get(marks.FINISHED_AT)
    if updated:
        steps.append(("last change", _iso(updated) or "?"))
    if row.get("expires_at"):
        steps.append(("kept until", _iso(row["expires_at"]) or "?"))
    return steps


def _unit_view(unit: Unit, personal: bool) -> dict[str, Any]:
    view: dict[str, Any] = {"kind": unit.kind, "id": unit.id, "person": unit.person if personal else HIDDEN}
    if unit.stored is None:
        view["stored"] = None
    else:
        from pipeline.domain import stored_text

        stored = {
            k: float(v) if isinstance(v, Decimal) else v
            for k, v in unit.stored.items()
            if k in ("stored_at", "status", "label", "triaged_at", "generation")
        }
        if personal and "text" in unit.stored:
            stored["text"] = stored_text.read(unit.stored["text"])
        if personal and "username" in unit.stored:  # a WhatsApp username: personal, as the number is
            stored["username"] = unit.stored["username"]
        view["stored"] = stored
    return view


def is_meta_id(item_id: str) -> bool:
    return bool(MESSAGE_ID.fullmatch(item_id) or COMMENT_ID.fullmatch(item_id))


def trace(
    ctx: Context,
    item_id: str,
    *,
    personal: bool = False,
    output: str = TEXT,
    lane: str | None = None,
    window: Selection | None = None,
    segments: int = DEFAULT_SEGMENTS,
) -> int:
    """`window`: for Meta's id, the rows searched (default: all the log and the jobs table hold)."""
    from ops.commands import dead_letter

    if not dead_letter.SQS_MESSAGE_ID.fullmatch(item_id):
        if lane is not None:
            raise OpsError("--lane goes with a dead letter's SQS message id (as `lanectl dlq peek` shows it)", USAGE)
        if is_meta_id(item_id):
            chosen = window or Selection(since=0.0, until=ctx.clock())
            via = Trace("meta", item_id, {})
            kind = "msg" if MESSAGE_ID.fullmatch(item_id) else "comment"
            found = _delivery_of(ctx, via, kind, item_id, chosen, segments)
            return _trace(ctx, found, personal=personal, output=output, via=via)
        return _trace(ctx, item_id, personal=personal, output=output)
    letter, search = dead_letter.find(ctx, item_id, lane)
    via = Trace("dead letter", item_id, {})
    via.reads.update({"sqs ReceiveMessage": search.receives, "sqs ChangeMessageVisibilityBatch": search.releases})
    if not letter.message.work_id:
        return _dead_letter_only(ctx, letter, output)
    return _trace(ctx, letter.message.work_id, personal=personal, output=output, via=via, letter=letter)


def _trace(
    ctx: Context,
    item_id: str,
    *,
    personal: bool,
    output: str,
    via: Trace | None = None,
    letter: Any = None,
) -> int:
    if WEBHOOK_ID.fullmatch(item_id):
        found = Trace("webhook", item_id, {})
        row = _get(ctx, found, "WebhookTableName", {"id": item_id})
    elif JOB_ID.fullmatch(item_id):
        found = Trace("job", item_id, {})
        row = _get(ctx, found, "JobsTableName", {"id": item_id})
    else:
        raise OpsError(
            f"{item_id!r} is neither a webhook log id (wh-<64 hex>, the door's log line and a dead letter's "
            "`id` carry it), a job id (job-<32 hex>, from POST /jobs), nor Meta's id of a message (wamid.…, m_…) "
            "or a comment (<post>_<comment>), nor a dead letter's SQS message id (a UUID: `lanectl dlq peek`)",
            USAGE,
        )
    if row is None:
        where = "webhook log" if found.source == "webhook" else "jobs table"
        raise OpsError(
            f"no {found.source} {item_id} in the {where} of {ctx.deployment().stack}: never taken, or past its "
            "retention (its row's TTL deleted it)",
            USAGE,
        )
    found.row = row
    if via is not None:
        found.reads.update(via.reads)
    if found.source == "webhook":
        _units(ctx, found)
    if found.source == "job" and row.get("kind") == INBOUND:
        _reply(ctx, found, personal)
    steps = _path(found)
    if output == JSON:
        ctx.console.json(
            {
                **({"found_by": via.id} if via is not None else {}),
                **({"dead_letter": letter.view(ctx.clock())} if letter is not None else {}),
                "source": found.source,
                "id": item_id,
                "path": [{"step": step, "detail": detail} for step, detail in steps],
                "units": [_unit_view(u, personal) for u in found.units],
                **({"reply": found.reply} if found.reply is not None else {}),
                "reads": found.reads,
            }
        )
        return 0
    _print(ctx, found, steps, personal=personal, via=via, letter=letter)
    return 0


def _print(
    ctx: Context, found: Trace, steps: list[tuple[str, str]], *, personal: bool, via: Trace | None, letter: Any
) -> None:
    if letter is not None:
        _dead_letter_lines(ctx, letter)
    elif via is not None:
        ctx.console.line(f"{via.id}: stored by")
    ctx.console.line(f"{found.source} {found.id}")
    for step, detail in steps + (trace_reply.lines(found.reply) if found.reply is not None else []):
        ctx.console.line(f"  {step:<12} {detail}")
    for unit in found.units:
        view = _unit_view(unit, personal)
        stored = "nothing stored" if view["stored"] is None else f"stored {view['stored']}"
        ctx.console.line(f"  {unit.kind:<12} {unit.id} from {view['person']}: {stored}")
    cost = ", ".join(f"{what} {count}" for what, count in sorted(found.reads.items()))
    if letter is not None:
        how = "consistent GetItems, the DLQ received and released; no scan"
    elif via is not None:
        how = "a Scan of the log and the jobs table for Meta's id, then consistent GetItems"
    else:
        how = "consistent GetItems; no scan"
    ctx.console.line(f"  reads: {cost} ({how})")


def _dead_letter_lines(ctx: Context, letter: Any) -> None:
    view = letter.view(ctx.clock())
    age = view["age_seconds"]
    ctx.console.line(
        f"dead letter {view['message_id']} on the {view['lane']} DLQ"
        + ("" if age is None else f", dead-lettered {_ago(float(age))} ago")
    )
    ctx.console.line(
        f"  reason       {view['reason']} (error_class {view['error_class'] or '-'}, attempts {view['attempts']})"
    )
    if view["error"]:
        ctx.console.line(f"  error        {view['error']}")
    if not view["parked_by_consumer"]:
        ctx.console.line("  (moved by SQS after max receives without success; no reason was attached)")


def _ago(seconds: float) -> str:
    from ops.output import duration

    return duration(seconds)


def _dead_letter_only(ctx: Context, letter: Any, output: str) -> int:
    """A dead letter that names no delivery or job (its body is not an envelope): all there is."""
    if output == JSON:
        ctx.console.json({"dead_letter": letter.view(ctx.clock()), "body_start": letter.message.body[:120]})
        return 0
    _dead_letter_lines(ctx, letter)
    ctx.console.line(f"  its body is not an envelope, so it names no delivery or job: {letter.message.body[:120]!r}")
    return 0
