"""Erasure: everything about one person, found by their hash and erased (`privacy.erase` jobs on
the bulk lane; see domain/erasure/requests.py for how a request becomes one). A person asked for by an
app-scoped id is also every id linked to it (`linked`, adapters/identity_links.py): one scan of
the log for all of them, then each one's indexes and partition.

A WhatsApp customer known by phone number and by business-scoped user id (BSUID) has items under
either, linked by the items themselves (tasks/messages.py): before anything is read, each hash's
links are followed (`_linked_ids`, what `find` reports in `Erasable.linked`) until no new one turns
up, so an erasure asked for by either id erases both, log rows included. At most
erasure.MAX_LINKED ids are followed; more is a bad erasure, never a partial one.

Rows first, then items: a message still on its way to a lane finds its row erased and writes
nothing, so no item about the person is made after their rows are gone. The webhook log is read
by a scan for the rows naming the person (adapters/erasure.py says why a scan): page by page,
each page's rows emptied before the next is read, and when the task's time runs short it stops
and leaves the rest to its next run (errors.MoreToDo: the consumer re-sends the job with the
place it got to, at no cost in attempts), so a log of any size is read whole. The job's row keeps
that place and the time too (`note_progress`), so the sweeper sees a long erasure alive rather
than lost, and a replay of its row resumes (domain/sweep/verdict.py). Then the indexes
and the person's partition are asked again (the indexes are eventually consistent, and a task may
have been writing as this one read) until they hold nothing; a person still turning up after
`ROUNDS` rounds is retried later.

A delivery that names several people carries every one's hash on its row (schema.SENDER_HASHES),
so the scan finds it whether or not its task has run. Beyond senders.MAX_NAMED_ON_ROW people it
carries none, and only the item per person its task writes points at it: one still queued when
the erasure runs is not found, and its task then stores what it says about the person. So the
erasure runs again `erase_again_seconds` later (a lane option: 15 minutes, SQS's longest delay), as internal
work of its own, for the items and what they point at; lanes that hold a delivery longer than
that have paged long before. The second run does not read the log again: rows that name the
person were emptied by the first, and a message they send afterwards is new.

What goes: webhook rows that name the person, with their body parts (a delivery naming several
people goes whole: its raw body is not cut apart), job rows about them, everything in their
partition of the data table (messages, statuses, comments and their triage, items pointing at
deliveries naming them among others) and every data item that carries their hash (conversation
turns and replies, items of jobs, and items written before the partitions), and the turn markers
of their conversations. What stays is not readable about them:
tombstones of the rows, done-markers keyed by digests, and counters. The links of an app-scoped id
to the others (hashes only) go as well.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import Any

from pipeline import schema
from pipeline.domain import senders
from pipeline.domain.consumer.work import Erasable, FollowUp, TaskContext, TaskResult
from pipeline.domain.effects import Table
from pipeline.domain.envelope import Envelope
from pipeline.domain.erasure import requests as erasure
from pipeline.domain.errors import MoreToDo, PermanentError, TransientError
from pipeline.tasks import conversations

KIND = erasure.KIND
ROUNDS = 3
AGAIN_OPTION = "erase_again_seconds"
AGAIN_SECONDS = "900"
AGAIN_SUFFIX = "-again"
SCAN_FROM = "scan_from"
ERASED = "erased"
PAGE_MARGIN = 3.0
"""A page is read only while the time left is at least this many times the slowest page so far
(and the index rounds after it): pages vary with the rows they find."""
LEAST_LEFT_SECONDS = 1.0


class StillFinding(TransientError):
    reason = "erasure_still_finding"


def _sender_hashes(payload: Any) -> list[str]:
    """The hash asked for, then each linked to it (domain/erasure.request)."""
    if not isinstance(payload, Mapping) or not senders.is_hash(payload.get("sender_hash")):
        raise PermanentError("bad_erasure", "payload must carry the sender_hash to erase")
    linked = payload.get("linked") or []
    if not isinstance(linked, list) or not all(senders.is_hash(value) for value in linked):
        raise PermanentError("bad_erasure", "the payload's linked must be a list of sender hashes")
    try:
        return erasure.hashes_of(str(payload["sender_hash"]), linked)
    except ValueError as exc:
        raise PermanentError("bad_erasure", str(exc)) from exc


def _scan_rows(ctx: TaskContext, sender_hashes: list[str], counts: Counter[str]) -> None:
    """Empty every row of the log that names any of them, from where an earlier run stopped."""
    progress = ctx.envelope.progress or {}
    cursor: Mapping[str, Any] | None = progress.get(SCAN_FROM)
    slowest = 0.0
    while True:
        before = ctx.remaining()
        page = ctx.eraser.scan_rows(sender_hashes, cursor)
        rows, parts = ctx.eraser.erase_log_rows(page.log_ids)
        counts["webhook_rows"] += rows
        counts["body_parts"] += parts
        cursor = page.resume_from
        if cursor is None:
            return
        left = ctx.remaining()
        slowest = max(slowest, before - left)
        if left < max(LEAST_LEFT_SECONDS, PAGE_MARGIN * slowest):
            progress = {SCAN_FROM: dict(cursor), ERASED: dict(counts)}
            if ctx.envelope.source == "job":
                # On the row too, with the time: the sweeper sees the job alive, and a replay of
                # the row (its continuation lost) takes up from here rather than from the top.
                ctx.eraser.note_progress(ctx.envelope.id, progress)
            raise MoreToDo(progress, "the webhook log is read on next run")


def _erase(ctx: TaskContext, found: Erasable, counts: Counter[str]) -> None:
    deliveries: set[str] = set()
    markers: dict[str, dict[str, str]] = {}
    for pk, sk in found.data_keys:
        log_id = senders.indexed_delivery(pk, sk)
        if log_id is not None:
            deliveries.add(log_id)
        marker = conversations.marker_of(pk)
        if marker is not None:
            markers[marker[schema.PK]] = marker
    rows, parts = ctx.eraser.erase_log_rows(sorted(deliveries))
    counts["webhook_rows"] += rows
    counts["body_parts"] += parts
    counts["jobs"] += ctx.eraser.erase_jobs(sorted(found.job_ids))
    counts["items"] += ctx.eraser.delete(Table.DATA, [{schema.PK: pk, schema.SK: sk} for pk, sk in found.data_keys])
    counts["markers"] += ctx.eraser.delete(Table.STATE, list(markers.values()))


def _again(ctx: TaskContext, sender_hashes: list[str]) -> tuple[FollowUp, ...]:
    """The second pass, after the first only (it is internal work: its id is done once)."""
    envelope = ctx.envelope
    if envelope.source == "internal":
        return ()
    again = Envelope(
        id=envelope.id + AGAIN_SUFFIX,
        lane=ctx.lane,
        tenant=envelope.tenant,
        kind=KIND,
        source="internal",
        created_at=ctx.now,
        deadline=envelope.deadline,
        payload={"sender_hash": sender_hashes[0], **({"linked": sender_hashes[1:]} if sender_hashes[1:] else {})},
    )
    return (FollowUp(again, delay_seconds=int(ctx.option(AGAIN_OPTION, AGAIN_SECONDS))),)


def _linked_ids(ctx: TaskContext, sender_hashes: list[str]) -> list[str]:
    """`sender_hashes` and every id linked to one of them, however far (see the module docstring)."""
    found = list(sender_hashes)
    for sender_hash in found:  # grows as it goes: each new id is asked in turn
        for other in ctx.eraser.find(sender_hash).linked:
            if other not in found:
                found.append(other)
        if len(found) > erasure.MAX_LINKED + 1:
            raise PermanentError("bad_erasure", f"more than {erasure.MAX_LINKED} ids are linked to this person")
    return found


def run(ctx: TaskContext) -> TaskResult:
    sender_hashes = _linked_ids(ctx, _sender_hashes(ctx.payload))
    counts: Counter[str] = Counter((ctx.envelope.progress or {}).get(ERASED) or {})
    if ctx.envelope.source != "internal":  # the second pass leaves the log alone (see above)
        _scan_rows(ctx, sender_hashes, counts)
    for sender_hash in sender_hashes:
        _erase_all(ctx, sender_hash, counts)
    # Which ids were one person's goes with them too (not counted: it is hashes, and it may not exist).
    ctx.eraser.delete(Table.STATE, [{schema.PK: erasure.link_key(sender_hash)} for sender_hash in sender_hashes])
    # Counts only: the detail is logged, and a hash is not for logs either.
    return TaskResult(follow_ups=_again(ctx, sender_hashes), detail={"erased": dict(counts)}, result=dict(counts))


def _erase_all(ctx: TaskContext, sender_hash: str, counts: Counter[str]) -> None:
    for _ in range(ROUNDS):
        found = ctx.eraser.find(sender_hash)
        if found.empty:
            return
        _erase(ctx, found, counts)
    raise StillFinding(f"items about the person still turn up after {ROUNDS} rounds")
