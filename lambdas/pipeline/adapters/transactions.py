"""Committing a record's done-mark together with its task's writes.

The done-mark alone is one conditional PutItem/UpdateItem (1 write unit per KB). With writes it
is one TransactWriteItems (2 units per KB per item): all land, or none. When the transaction is
cancelled, the cancellation reasons say which conditions failed, and each failed write's
`on_conflict` decides what happens next:

- the done-mark (FAIL): another copy finished first → DUPLICATE, nothing written;
- a SKIP write (a stale status, a message already stored): dropped, and the rest retried, so one
  stale item never blocks the record;
- a SUPERSEDE check (a newer turn marker): the done-mark is committed alone → SUPERSEDED.

Writes that are each idempotent by key can also be applied without any done-mark (`apply`): one
conditional call each, 1 unit per KB, where a transaction costs 2. The consumer does that where
the writes themselves say the work was done (domain/marks.effect_is_mark).

A transaction holds at most 100 items. A larger result may still commit if the writes over the
limit are `standalone` (safe to apply ahead of the done-mark, since re-applying them changes
nothing): those go first, in chunks; the last transaction carries the done-mark
(domain/consumer/commit_plan.py). Before each call the caller's `room` says whether there is time for it;
when there is not, the commit stops there (PARTIAL, with how many writes landed), and a re-sent
copy resumes after them (`resume_from`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from botocore.exceptions import ClientError

from pipeline.adapters import items
from pipeline.adapters.tables import TableNames
from pipeline.domain.consumer import commit_plan
from pipeline.domain.effects import Check, OnConflict, Put, Update, Write, item_key
from pipeline.domain.errors import PermanentError
from pipeline.domain.ports import CommitResult, CommitState

MAX_TRANSACTION_ITEMS = commit_plan.MAX_TRANSACTION_ITEMS


def _expression_parts(write: Write) -> dict[str, Any]:
    parts: dict[str, Any] = {}
    if write.condition:
        parts["ConditionExpression"] = write.condition
    if write.names:
        parts["ExpressionAttributeNames"] = dict(write.names)
    if write.values:
        parts["ExpressionAttributeValues"] = items.to_item(write.values)
    return parts


def request(write: Write, tables: TableNames) -> tuple[str, dict[str, Any]]:
    """(operation, parameters) in the low-level client's shape, for a transaction item or a
    single call alike."""
    table = tables[write.table]
    if isinstance(write, Put):
        return "Put", {"TableName": table, "Item": items.to_item(write.item), **_expression_parts(write)}
    if isinstance(write, Update):
        return "Update", {
            "TableName": table,
            "Key": items.to_item(write.key),
            "UpdateExpression": write.expression,
            **_expression_parts(write),
        }
    if isinstance(write, Check):
        return "ConditionCheck", {"TableName": table, "Key": items.to_item(write.key), **_expression_parts(write)}
    raise TypeError(f"not a write: {write!r}")


def _code(exc: ClientError) -> str:
    return str(exc.response.get("Error", {}).get("Code", ""))


class Committer:
    def __init__(self, dynamodb: Any, tables: TableNames) -> None:
        self._dynamodb = dynamodb
        self._tables = tables

    def commit(
        self, mark: Write, writes: Sequence[Write], *, resume_from: int = 0, room: Callable[[], bool] | None = None
    ) -> CommitResult:
        _refuse_repeated_items([mark, *writes])
        ahead, bound = commit_plan.plan(writes)
        start = done = resume_from if 0 < resume_from <= len(ahead) else 0
        skipped = 0
        # The first call is made whatever the time: the caller checked there was room for one.
        while done < len(ahead):
            if done > start and room is not None and not room():
                return CommitResult(CommitState.PARTIAL, skipped, done)
            chunk = ahead[done : done + MAX_TRANSACTION_ITEMS]
            skipped += self._apply(chunk, mark=None).skipped
            done += len(chunk)
        if done > start and room is not None and not room():
            return CommitResult(CommitState.PARTIAL, skipped, done)
        result = self._apply([mark, *bound], mark=mark)
        return CommitResult(result.state, result.skipped + skipped, done)

    def apply(
        self, writes: Sequence[Write], *, resume_from: int = 0, room: Callable[[], bool] | None = None
    ) -> CommitResult:
        _refuse_repeated_items(writes)
        if not writes or not all(write.standalone for write in writes):
            raise PermanentError("not_standalone", "only standalone writes are applied without a done-mark")
        start = resume_from if 0 < resume_from <= len(writes) else 0
        skipped = 0
        for done in range(start, len(writes)):
            # The first write is made whatever the time: the caller checked there was room for one.
            if done > start and room is not None and not room():
                return CommitResult(CommitState.PARTIAL, skipped, done)
            if self._single(writes[done]) is not CommitState.COMMITTED:
                skipped += 1
        # Every item created-if-absent was there already: another copy did this work. A stale
        # update skipped (a `delivered` after `read`) is work done, with nothing left to change.
        repeated = start == 0 and skipped == len(writes) and all(isinstance(write, Put) for write in writes)
        return CommitResult(CommitState.DUPLICATE if repeated else CommitState.COMMITTED, skipped, len(writes))

    def _apply(self, pending: list[Write], mark: Write | None) -> CommitResult:
        skipped = 0
        superseded = False
        while pending:
            if len(pending) == 1:
                state = self._single(pending[0])
                if state is None:  # a lone SKIP write that failed its condition
                    return CommitResult(CommitState.COMMITTED, skipped + 1)
                if superseded and state is CommitState.COMMITTED:
                    return CommitResult(CommitState.SUPERSEDED, skipped)
                return CommitResult(state, skipped)
            failed = self._transact(pending)
            if not failed:
                return CommitResult(CommitState.SUPERSEDED if superseded else CommitState.COMMITTED, skipped)
            policies = {pending[i].on_conflict for i in failed}
            if OnConflict.FAIL in policies:
                return CommitResult(CommitState.DUPLICATE, skipped)
            if OnConflict.SUPERSEDE in policies:
                if mark is None:
                    raise PermanentError("standalone_supersede", "a standalone write cannot supersede its record")
                superseded = True
                pending = [mark]
                continue
            skipped += len(failed)
            pending = [write for i, write in enumerate(pending) if i not in failed]
        return CommitResult(CommitState.COMMITTED, skipped)

    def _transact(self, writes: list[Write]) -> set[int]:
        """Run one transaction; the indices whose conditions failed (empty: committed)."""
        transact_items = []
        for write in writes:
            operation, params = request(write, self._tables)
            transact_items.append({operation: params})
        try:
            self._dynamodb.transact_write_items(TransactItems=transact_items)
        except ClientError as exc:
            if _code(exc) != "TransactionCanceledException":
                raise
            reasons = exc.response.get("CancellationReasons") or []
            failed = {i for i, reason in enumerate(reasons) if reason.get("Code") == "ConditionalCheckFailed"}
            others = {str(reason.get("Code")) for reason in reasons} - {"None", "ConditionalCheckFailed", ""}
            if others or not failed:
                # TransactionConflict (another copy committing right now), throttling, ...: the
                # caller classifies the error and the record is retried.
                raise
            return failed
        return set()

    def _single(self, write: Write) -> CommitState | None:
        operation, params = request(write, self._tables)
        call = {"Put": self._dynamodb.put_item, "Update": self._dynamodb.update_item}.get(operation)
        if call is None:
            raise PermanentError("lone_check", "a condition check cannot be committed on its own")
        try:
            call(**params)
        except ClientError as exc:
            if _code(exc) != "ConditionalCheckFailedException":
                raise
            if write.on_conflict is OnConflict.FAIL:
                return CommitState.DUPLICATE
            if write.on_conflict is OnConflict.SUPERSEDE:
                return CommitState.SUPERSEDED
            return None
        return CommitState.COMMITTED


def _refuse_repeated_items(writes: Sequence[Write]) -> None:
    seen: set[tuple[str, tuple[str, ...]]] = set()
    for write in writes:
        key = item_key(write)
        if key in seen:
            # DynamoDB refuses the whole transaction; saying which item is kinder than its
            # ValidationException, and it is a task bug no retry fixes.
            raise PermanentError("repeated_item", f"two writes to one item in one commit: {key}")
        seen.add(key)
