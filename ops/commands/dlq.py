"""`lanectl dlq list` and `lanectl dlq peek`: what is dead-lettered, and why (as text, or with
`--output json` as one document for scripts)."""

from __future__ import annotations

from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from ops import messages
from ops.context import Context
from ops.errors import NOTHING_TO_DO, OpsError
from ops.output import JSON, TEXT, duration, table
from ops.resolve import known_lane
from pipeline.adapters import lane_queue

PEEK_NOTE = (
    "peek receives each message, holds it for at most {hold} s and makes it visible again at once; "
    "its receive count on the DLQ rises by one, which nothing acts on (a DLQ has no redrive policy of its own)"
)


def _oldest_age(ctx: Context, dlq_name: str, dlq_url: str, visible: int) -> tuple[float | None, str]:
    """(age, where it came from). CloudWatch first: it costs no receive. Without a datapoint (an
    emulator, or a queue SQS stopped reporting) the age comes from a peek's SentTimestamps."""
    now = ctx.clock()
    try:
        age = messages.oldest_age_from_metrics(ctx.aws.client("cloudwatch"), dlq_name, now)
    except (BotoCoreError, ClientError):
        age = None
    if age is not None:
        return age, "cloudwatch"
    if visible == 0:
        return None, "-"
    peeked = messages.peek(ctx.aws.client("sqs"), dlq_url, 100)
    sent = [m.sent_at for m in peeked if m.sent_at is not None]
    if not sent:
        return None, "-"
    return now - min(sent), "peek" if visible <= len(peeked) else f"peek of {len(peeked)}"


def list_dlqs(ctx: Context, *, output: str = TEXT) -> int:
    deployment = ctx.deployment()
    sqs = ctx.aws.client("sqs")
    rows = []
    for lane in ctx.env.lanes:
        resources = deployment.lane(lane.name)
        depth = lane_queue.depth(sqs, resources.dlq_url)
        age, source = (
            (None, "-") if depth.total == 0 else _oldest_age(ctx, resources.dlq_name, resources.dlq_url, depth.visible)
        )
        rows.append((lane.name, depth, age, source))
    total = sum(depth.total for _, depth, _, _ in rows)
    lanes_with_letters = [name for name, depth, _, _ in rows if depth.total]
    if output == JSON:
        ctx.console.json(
            {
                "stack": deployment.stack,
                "where": ctx.target.where,
                "total": total,
                "lanes": [
                    {
                        "lane": name,
                        "visible": depth.visible,
                        "in_flight": depth.in_flight,
                        "delayed": depth.delayed,
                        "oldest_age_seconds": None if age is None else round(age, 3),
                        "age_from": None if source == "-" else source,
                    }
                    for name, depth, age, source in rows
                ],
            }
        )
        return 0
    ctx.console.line(f"dead-letter queues of {deployment.stack} ({ctx.target.where})")
    ctx.console.table(
        table(
            ("LANE", "DEPTH", "IN FLIGHT", "OLDEST", "AGE FROM"),
            [(name, depth.visible, depth.in_flight, duration(age), source) for name, depth, age, source in rows],
            right=(1, 2),
        )
    )
    if total == 0:
        ctx.console.line("every dead-letter queue is empty")
    else:
        ctx.console.line(
            f"{total} dead-lettered message(s) on {', '.join(lanes_with_letters)}; "
            f"see why with: lanectl dlq peek LANE --env {ctx.env.name}"
        )
    return 0


def peek_dlq(ctx: Context, lane_name: str, count: int, *, output: str = TEXT) -> int:
    known_lane(ctx.env, lane_name)
    resources = ctx.deployment().lane(lane_name)
    sqs = ctx.aws.client("sqs")
    depth = lane_queue.depth(sqs, resources.dlq_url)
    if depth.total == 0:
        raise OpsError(f"the {lane_name} dead-letter queue is empty: nothing to peek", NOTHING_TO_DO)
    lane_max = lane_queue.max_receives(sqs, resources.queue_url)
    peeked = messages.peek(sqs, resources.dlq_url, count)
    if not peeked:
        raise OpsError(
            f"the {lane_name} dead-letter queue shows no visible message ({depth.in_flight} in flight: being "
            "peeked or moved by someone else right now); try again in a minute",
            NOTHING_TO_DO,
        )
    now = ctx.clock()
    if output == JSON:
        ctx.console.json(
            {
                "lane": lane_name,
                "visible": depth.visible,
                "in_flight": depth.in_flight,
                "note": PEEK_NOTE.format(hold=messages.PEEK_HOLD_SECONDS),
                "messages": [_peeked(message, lane_max, now) for message in peeked],
            }
        )
        return 0
    ctx.console.line(
        f"{lane_name} dead-letter queue: {depth.visible} visible, {depth.in_flight} in flight; "
        f"showing {len(peeked)}, oldest first"
    )
    ctx.console.line(f"({PEEK_NOTE.format(hold=messages.PEEK_HOLD_SECONDS)})")
    for number, message in enumerate(peeked, start=1):
        age = None if message.sent_at is None else now - message.sent_at
        ctx.console.line()
        ctx.console.line(
            f"{number}. {message.work_id or message.message_id}  tenant={message.tenant or '-'}  "
            f"kind={message.kind or '-'}  sent {duration(age)} ago  attempts={message.attempts(lane_max)}"
        )
        ctx.console.line(f"   reason: {message.reason}  error_class: {message.attributes.get('error_class', '-')}")
        if message.attributes.get("error"):
            ctx.console.line(f"   error: {message.attributes['error']}")
        if not message.parked_by_consumer:
            ctx.console.line(
                f"   (moved by SQS after {lane_max or '?'} receives without success; no reason was attached)"
            )
        if message.envelope is None:
            ctx.console.line(f"   body is not an envelope: {message.body[:120]!r}")
    return 0


def _peeked(message: messages.Message, lane_max: int | None, now: float) -> dict[str, Any]:
    """What the text shows of one message, as fields (the body only when it is not an envelope)."""
    return {
        "id": message.work_id or None,
        "message_id": message.message_id,
        "tenant": message.tenant or None,
        "kind": message.kind or None,
        "sent_at": message.sent_at,
        "age_seconds": None if message.sent_at is None else round(now - message.sent_at, 3),
        "attempts": message.attempts(lane_max),
        "reason": message.reason,
        "error_class": message.attributes.get("error_class"),
        "error": message.attributes.get("error"),
        "parked_by_consumer": message.parked_by_consumer,
        "envelope": message.envelope is not None,
        "body_start": None if message.envelope is not None else message.body[:120],
    }
