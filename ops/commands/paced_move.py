"""A paced DLQ-to-lane move done by the CLI: what StartMessageMoveTask does, plus a tenant filter.

Each message is received (hidden for a minute), sent to the lane queue with its original body,
attributes and tenant group, then deleted from the DLQ. Sends are spaced so the rate never
exceeds the one asked for. Other tenants' messages stay hidden until the pass is over, so each is
looked at once; when only those come back, every message has been seen. Whatever is in hand when
the move stops (Ctrl-C, a refused send) is made visible in the DLQ again: nothing is dropped.
"""

from __future__ import annotations

from typing import Any

from ops import messages
from ops.context import Context
from ops.errors import FAILED, INTERRUPTED, OK, OpsError
from ops.messages import Message
from ops.progress import Progress
from ops.resolve import LaneResources
from pipeline.adapters import lane_queue

MOVE_HOLD_SECONDS = 60
"""How long a message being moved stays hidden: ample for one send and one delete."""


def _send(sqs: Any, queue_url: str, batch: list[Message]) -> tuple[list[Message], list[tuple[Message, str]]]:
    entries = []
    for index, message in enumerate(batch):
        entry: dict[str, Any] = {"Id": str(index), "MessageBody": message.body}
        if message.wire_attributes:
            entry["MessageAttributes"] = dict(message.wire_attributes)
        group = message.tenant or message.group_id
        if group:
            entry["MessageGroupId"] = group  # fair queues: the tenant's share, as on first delivery
        entries.append(entry)
    response = sqs.send_message_batch(QueueUrl=queue_url, Entries=entries)
    refused = [(batch[int(f["Id"])], str(f.get("Message") or f.get("Code"))) for f in response.get("Failed", [])]
    refused_ids = {m.message_id for m, _ in refused}
    return [m for m in batch if m.message_id not in refused_ids], refused


def _delete(sqs: Any, dlq_url: str, batch: list[Message]) -> int:
    if not batch:
        return 0
    response = sqs.delete_message_batch(
        QueueUrl=dlq_url, Entries=[{"Id": str(i), "ReceiptHandle": m.receipt_handle} for i, m in enumerate(batch)]
    )
    return len(response.get("Failed", []))


class PacedMove:
    def __init__(self, ctx: Context, sqs: Any, resources: LaneResources, *, rate: int, tenant: str | None) -> None:
        self._ctx = ctx
        self._sqs = sqs
        self._lane = resources
        self._rate = rate
        self._tenant = tenant
        self._skipped: dict[str, str] = {}  # message id → latest receipt handle
        self._in_hand: list[Message] = []
        self._next_send = ctx.clock()
        self.moved = 0
        self.undeleted = 0

    def run(self, total: int | None) -> int:
        interrupted = False
        with Progress(self._ctx, total) as progress:
            try:
                while self._step():
                    progress.show(self.moved)
            except KeyboardInterrupt:
                interrupted = True
            finally:
                held = [m.receipt_handle for m in self._in_hand] + list(self._skipped.values())
                messages.release(self._sqs, self._lane.dlq_url, held)
            progress.show(self.moved, final=True)
        summary = self._summary()
        if interrupted:
            self._ctx.console.line(f"interrupted: {summary}")
            return INTERRUPTED
        self._ctx.console.line(f"done: {summary}")
        return OK

    def _step(self) -> bool:
        """Receive one batch and move what belongs; False once there is nothing left to look at."""
        batch = messages.receive(
            self._sqs, self._lane.dlq_url, max(1, min(messages.BATCH, self._rate)), MOVE_HOLD_SECONDS
        )
        fresh = [m for m in batch if m.message_id not in self._skipped]
        for message in batch:
            if message.message_id in self._skipped:
                self._skipped[message.message_id] = message.receipt_handle
        if not fresh:
            return False  # empty, or only skipped messages came round again
        to_move = [m for m in fresh if self._tenant is None or m.tenant == self._tenant]
        for message in fresh:
            if message not in to_move:
                self._skipped[message.message_id] = message.receipt_handle
        if to_move:
            self._move(to_move)
        return True

    def _move(self, batch: list[Message]) -> None:
        self._in_hand = batch
        wait = self._next_send - self._ctx.clock()
        if wait > 0:
            self._ctx.sleep(wait)
        self._next_send = max(self._next_send, self._ctx.clock()) + len(batch) / self._rate
        sent, refused = _send(self._sqs, self._lane.queue_url, batch)
        self.undeleted += _delete(self._sqs, self._lane.dlq_url, sent)
        self.moved += len(sent)
        self._in_hand = [m for m, _ in refused]
        if refused:
            raise OpsError(
                f"the {self._lane.name} queue refused {len(refused)} message(s) ({refused[0][1]}); they stay in "
                f"the dead-letter queue. Moved {self.moved} before stopping",
                FAILED,
            )

    def _summary(self) -> str:
        left = lane_queue.depth(self._sqs, self._lane.dlq_url)
        text = f"moved {self.moved} message(s) back to the {self._lane.name} queue"
        if self._tenant is not None:
            text += f" (tenant {self._tenant}; {len(self._skipped)} of other tenants left in place)"
        if self.undeleted:
            text += f"; {self.undeleted} were sent but not deleted from the dead-letter queue, so they will run twice"
        return text + f"; {left.visible + left.in_flight} left in the dead-letter queue"
