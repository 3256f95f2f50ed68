"""Finding one dead letter by the SQS message id `lanectl dlq peek` shows, for `lanectl trace`.

SQS has no read by id: the lookup receives the DLQ a batch of ten at a time (long polls of a
second, each message held `HOLD_SECONDS`) until it meets the id or comes round to messages it has
already seen, then makes every message it received visible again at once (one
ChangeMessageVisibilityBatch per ten). So a DLQ of n messages costs about n/10 receives and as many
visibility changes; nothing is deleted, each message's receive count on the DLQ rises by one
(which nothing acts on: a DLQ has no redrive policy of its own), and another reader of the DLQ (a
redrive, a peek) misses the messages this lookup holds for at most `HOLD_SECONDS`. Without
`--lane`, every lane's DLQ that holds anything is searched (one GetQueueAttributes each first).
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field

from botocore.exceptions import BotoCoreError, ClientError

from ops import messages
from ops.aws import describe_error
from ops.context import Context
from ops.errors import AWS, USAGE, OpsError
from ops.resolve import known_lane
from pipeline.adapters import lane_queue

SQS_MESSAGE_ID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
HOLD_SECONDS = 10
"""How long a message received while searching stays hidden if the release never comes."""


@dataclass
class Search:
    receives: int = 0
    releases: int = 0
    looked_at: int = 0
    queues: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class DeadLetter:
    lane: str
    message: messages.Message
    lane_max_receives: int | None

    def view(self, now: float) -> dict[str, object]:
        m = self.message
        return {
            "message_id": m.message_id,
            "lane": self.lane,
            "id": m.work_id or None,
            "tenant": m.tenant or None,
            "kind": m.kind or None,
            "reason": m.reason,
            "error_class": m.attributes.get("error_class"),
            "error": m.attributes.get("error"),
            "attempts": m.attempts(self.lane_max_receives),
            "parked_by_consumer": m.parked_by_consumer,
            "age_seconds": None if m.sent_at is None else round(now - m.sent_at, 3),
        }


def _search(ctx: Context, lane: str, url: str, message_id: str, search: Search) -> messages.Message | None:
    sqs = ctx.aws.client("sqs")
    seen: set[str] = set()
    handles: list[str] = []
    started = time.monotonic()
    found = None
    search.queues.append(lane)
    try:
        while found is None and time.monotonic() - started < HOLD_SECONDS * 0.8:
            batch = messages.receive(sqs, url, messages.BATCH, HOLD_SECONDS)
            search.receives += 1
            if not batch:
                break
            handles.extend(m.receipt_handle for m in batch)
            fresh = [m for m in batch if m.message_id not in seen]
            if not fresh:
                break
            seen.update(m.message_id for m in fresh)
            search.looked_at += len(fresh)
            found = next((m for m in fresh if m.message_id == message_id), None)
    finally:
        search.releases += -(-len(handles) // messages.BATCH)
        messages.release(sqs, url, handles)
    return found


def find(ctx: Context, message_id: str, lane_name: str | None) -> tuple[DeadLetter, Search]:
    """The dead letter with this SQS message id, on `lane_name`'s DLQ or any lane's."""
    lanes = [known_lane(ctx.env, lane_name).name] if lane_name else [lane.name for lane in ctx.env.lanes]
    sqs = ctx.aws.client("sqs")
    search = Search()
    try:
        for name in lanes:
            resources = ctx.deployment().lane(name)
            if lane_name is None and lane_queue.depth(sqs, resources.dlq_url).total == 0:
                continue
            message = _search(ctx, name, resources.dlq_url, message_id, search)
            if message is not None:
                return DeadLetter(name, message, lane_queue.max_receives(sqs, resources.queue_url)), search
    except (BotoCoreError, ClientError) as exc:
        raise OpsError(f"cannot read the dead-letter queues: {describe_error(exc)}", AWS) from exc
    where = f"the {lane_name} dead-letter queue" if lane_name else "any lane's dead-letter queue"
    raise OpsError(
        f"no message {message_id} in {where} of {ctx.deployment().stack} (looked at {search.looked_at} message(s) "
        f"with {search.receives} receive(s)): redriven, deleted, past the DLQ's 14 days, or on another lane; "
        "`lanectl dlq peek LANE` lists what is there",
        USAGE,
    )
