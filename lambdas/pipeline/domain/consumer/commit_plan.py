"""How a record's writes are split into calls, and where a commit cut short takes up again.

A transaction holds at most 100 items. Writes over that which are `standalone` (re-applying one
changes nothing) go ahead of the done-mark's transaction in chunks; the final transaction carries
the mark with every write that is not standalone, filled up with standalone ones so the fewest go
ahead (`plan`). A delivery with thousands of units is tens of calls before its mark, more than an
invocation may have left: the consumer makes them while it has time, then re-sends the record
carrying how many of those writes landed (`progress_after`), and the copy's commit starts after
them (`resume_point`). The count comes with a fingerprint of the keys it covers, so a copy whose
writes came out in another order starts again from the first (safe: each is idempotent).
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from typing import Any

from pipeline.domain.effects import Write, item_key
from pipeline.domain.errors import PermanentError

MAX_TRANSACTION_ITEMS = 100
COMMITTED = "committed_writes"
FINGERPRINT = "committed_keys"


def plan(writes: Sequence[Write]) -> tuple[list[Write], list[Write]]:
    """(ahead, bound): the standalone writes applied before the mark, in chunks of a transaction,
    and those that commit in the mark's own transaction."""
    bound = list(writes)
    if len(bound) + 1 <= MAX_TRANSACTION_ITEMS:
        return [], bound
    ahead = [write for write in bound if write.standalone]
    bound = [write for write in bound if not write.standalone]
    if len(bound) + 1 > MAX_TRANSACTION_ITEMS:
        raise PermanentError(
            "too_many_writes",
            f"{len(bound)} writes must commit with the done-mark; a transaction holds {MAX_TRANSACTION_ITEMS} items",
        )
    room = MAX_TRANSACTION_ITEMS - 1 - len(bound)
    return ahead[room:], ahead[:room] + bound


def fingerprint(writes: Sequence[Write]) -> str:
    digest = hashlib.sha256()
    for write in writes:
        digest.update(repr(item_key(write)).encode("utf-8", "surrogatepass"))
    return digest.hexdigest()[:16]


def resume_point(progress: Mapping[str, Any] | None, writes: Sequence[Write]) -> int:
    """How many of `writes` an earlier copy already applied (0 when none, or when it cannot tell)."""
    done = (progress or {}).get(COMMITTED)
    if isinstance(done, bool) or not isinstance(done, int) or not 0 < done <= len(writes):
        return 0
    return done if (progress or {}).get(FINGERPRINT) == fingerprint(writes[:done]) else 0


def progress_after(progress: Mapping[str, Any] | None, writes: Sequence[Write], done: int) -> dict[str, Any]:
    """The progress a re-sent copy carries: what it carried before, and the first `done` writes."""
    return {**(progress or {}), COMMITTED: done, FINGERPRINT: fingerprint(writes[:done])}
