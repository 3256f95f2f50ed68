"""`lanectl dlq redrive`: move dead-lettered messages back to their lane, paced.

Recovery is paced on purpose: releasing a whole dead-letter queue at once onto a dependency that
has only just recovered is how a second outage starts. On AWS the move is SQS's own message move
task (StartMessageMoveTask with MaxNumberOfMessagesPerSecond). With a tenant filter (which the move
task cannot do), or on a backend without that API (the local emulator), the same move is done here:
receive, send to the lane with the original body and attributes, delete; at the same rate. Either
way the progress is shown until it is done, and Ctrl-C stops it (what moved stays moved).
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from botocore.exceptions import ClientError

from ops import messages
from ops.commands.paced_move import PacedMove
from ops.context import Context
from ops.errors import BUSY, FAILED, INTERRUPTED, NOTHING_TO_DO, OK, OpsError
from ops.output import duration
from ops.progress import Progress
from ops.resolve import LaneResources, known_lane
from pipeline.adapters import lane_queue

MAX_RATE = 500
"""StartMessageMoveTask's own ceiling for MaxNumberOfMessagesPerSecond."""
DEFAULT_RATE = 10
POLL_SECONDS = 2.0
DRY_RUN_PEEK = 500
_UNSUPPORTED_CODES = frozenset(
    {"InvalidAction", "UnsupportedOperation", "NotImplemented", "UnknownOperationException", "InvalidRequest"}
)


def _unsupported(exc: Exception) -> bool:
    """Does this error mean "this backend has no such API" (rather than "the call failed")? moto
    raises NotImplementedError in-process and answers HTTP 500 with no AWS error code as a server;
    AWS itself always names its error."""
    if isinstance(exc, NotImplementedError):
        return True
    if isinstance(exc, ClientError):
        code = str(exc.response.get("Error", {}).get("Code", ""))
        return code in _UNSUPPORTED_CODES or code.isdigit()
    return False


def move_tasks(sqs: Any, dlq_arn: str) -> list[dict[str, Any]] | None:
    """The recent move tasks from this DLQ, or None when the backend cannot move messages."""
    try:
        return list(sqs.list_message_move_tasks(SourceArn=dlq_arn, MaxResults=10).get("Results", []))
    except (NotImplementedError, ClientError) as exc:
        if _unsupported(exc):
            return None
        raise


def redrive(ctx: Context, lane_name: str, *, rate: int, dry_run: bool, tenant: str | None) -> int:
    known_lane(ctx.env, lane_name)
    resources = ctx.deployment().lane(lane_name)
    sqs = ctx.aws.client("sqs")
    depth = lane_queue.depth(sqs, resources.dlq_url)
    if depth.total == 0:
        raise OpsError(f"the {lane_name} dead-letter queue is empty: nothing to redrive", NOTHING_TO_DO)
    tasks = move_tasks(sqs, resources.dlq_arn)
    running = [task for task in tasks or [] if task.get("Status") == "RUNNING"]
    if running:
        task = running[0]
        raise OpsError(
            f"a message move task is already running from the {lane_name} dead-letter queue "
            f"({task.get('ApproximateNumberOfMessagesMoved', 0)} of "
            f"{task.get('ApproximateNumberOfMessagesToMove', '?')} moved); wait for it to finish, or cancel it: "
            f"aws sqs cancel-message-move-task --task-handle {task.get('TaskHandle', '<handle>')}",
            BUSY,
        )
    if tenant is not None:
        method, why = "paced move", "a move task cannot filter by tenant"
    elif tasks is None:
        method, why = "paced move", "this backend has no StartMessageMoveTask"
    else:
        method, why = "message move task", "StartMessageMoveTask"
    if dry_run:
        return _dry_run(ctx, sqs, resources, depth, rate=rate, tenant=tenant, method=f"{method} ({why})")
    ctx.console.line(
        f"redriving the {lane_name} dead-letter queue to the {lane_name} queue at {rate} msg/s "
        f"by {method} ({why}); Ctrl-C stops it"
    )
    if method == "message move task":
        return _move_task(ctx, sqs, resources, rate=rate, total=depth.visible)
    return PacedMove(ctx, sqs, resources, rate=rate, tenant=tenant).run(total=None if tenant else depth.visible)


def _dry_run(
    ctx: Context,
    sqs: Any,
    resources: LaneResources,
    depth: lane_queue.Depth,
    *,
    rate: int,
    tenant: str | None,
    method: str,
) -> int:
    lane = resources.name
    peeked = messages.peek(sqs, resources.dlq_url, DRY_RUN_PEEK, clock=ctx.clock)
    partial = depth.visible > len(peeked)
    matching = [m for m in peeked if tenant is None or m.tenant == tenant]
    count = len(matching) if tenant is not None else depth.visible
    scope = f"from a peek of {len(peeked)}" if partial else "all visible messages"
    ctx.console.line("dry run: nothing will be moved")
    ctx.console.line(f"  from: {lane} dead-letter queue ({depth.visible} visible, {depth.in_flight} in flight)")
    ctx.console.line(f"  to:   {lane} queue")
    ctx.console.line(f"  how:  {method}, at most {rate} msg/s")
    if tenant is not None:
        ctx.console.line(f"  only: tenant {tenant}: {count} message(s) ({scope})")
    ctx.console.line(f"  would move {count} message(s), taking about {duration(count / rate)}")
    reasons = Counter(m.reason for m in matching)
    tenants = Counter(m.tenant or "-" for m in matching)
    if matching:
        ctx.console.line(f"  by reason ({scope}): " + ", ".join(f"{r} {n}" for r, n in reasons.most_common()))
        ctx.console.line(f"  by tenant ({scope}): " + ", ".join(f"{t} {n}" for t, n in tenants.most_common(10)))
    return OK


def _our_task(sqs: Any, dlq_arn: str, handle: str, started_ms: float) -> dict[str, Any] | None:
    results = sqs.list_message_move_tasks(SourceArn=dlq_arn, MaxResults=10).get("Results", [])
    for task in results:
        if task.get("TaskHandle") == handle:
            return dict(task)
    # Only a running task lists its handle; once finished, ours is the newest started after us.
    for task in results:
        if float(task.get("StartedTimestamp", 0)) >= started_ms - 60_000:
            return dict(task)
    return None


def _move_task(ctx: Context, sqs: Any, resources: LaneResources, *, rate: int, total: int) -> int:
    started_ms = ctx.clock() * 1000
    handle = sqs.start_message_move_task(
        SourceArn=resources.dlq_arn, DestinationArn=resources.queue_arn, MaxNumberOfMessagesPerSecond=rate
    )["TaskHandle"]
    moved = 0
    with Progress(ctx, total) as progress:
        try:
            while True:
                ctx.sleep(POLL_SECONDS)
                task = _our_task(sqs, resources.dlq_arn, handle, started_ms)
                if task is None:
                    raise OpsError(
                        "the move task no longer appears in ListMessageMoveTasks; check the SQS console", FAILED
                    )
                moved = int(task.get("ApproximateNumberOfMessagesMoved", 0))
                to_move = int(task.get("ApproximateNumberOfMessagesToMove") or total)
                status = task.get("Status")
                progress.show(moved, to_move, final=status != "RUNNING")
                if status == "COMPLETED":
                    ctx.console.line(f"done: moved {moved} message(s) back to the {resources.name} queue")
                    return OK
                if status in ("CANCELLING", "CANCELLED"):
                    raise OpsError(f"the move task was cancelled (by someone else) after moving {moved}", FAILED)
                if status == "FAILED":
                    raise OpsError(
                        f"the move task failed after moving {moved}: {task.get('FailureReason', '?')}", FAILED
                    )
        except KeyboardInterrupt:
            progress.close()
            sqs.cancel_message_move_task(TaskHandle=handle)
            ctx.console.line(
                f"interrupted: cancelled the move task after about {moved} message(s); what moved stays moved"
            )
            return INTERRUPTED
