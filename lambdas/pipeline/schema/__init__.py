"""Table layouts shared by the stack that creates the tables and the code that uses them.

Webhook log and jobs carry the obligation: a row exists before its message is sent. A job row is
written "queued" with `pending_shard`, which puts it in the sparse `pending_by_age` index (sorted
by `pending_since`), until a consumer finishes it and removes the attribute. A webhook row enters
that index only when the door could not send its message; most webhook rows are finished by
their task's own writes and never written again (domain/consumer/marks.py), so a delivery costs one write
and no index entry. The sweeper queries the index, never scans. The shard spreads index writes
so a burst does not land on one index partition.
"""

from __future__ import annotations

import hashlib

# Webhook log and jobs
ID = "id"
PENDING_INDEX = "pending_by_age"
PENDING_SHARD = "pending_shard"
PENDING_SINCE = "pending_since"
PENDING_SHARDS = 8
SEND_FAILED_AT = "send_failed_at"
GENERATION = "generation"
"""On a row a replay finished, and on the items its task wrote: the replay's generation
(domain/consumer/generations.py). Absent on everything the pipeline's own traffic writes (generation 0)."""
"""On a webhook row the door put in the pending index because its send failed."""

# State (idempotency markers, budgets, counters) and data (what the lane tasks write)
PK = "pk"
SK = "sk"
TTL = "expires_at"
"""Epoch seconds after which DynamoDB's TTL deletes the item; on every item of every table."""

# Webhook log, jobs and data: who an item is about (domain/senders.py)
SENDER_HASH = "sender_hash"
PROGRESS = "progress"
"""On a job row whose task had more than one run's time (errors.MoreToDo): the progress its latest
continuation carries, which a replay of the row carries too."""
ALIVE_AT = "alive_at"
"""On a job row beside `progress`: when its task last reported it (a heartbeat the sweeper reads)."""
SENDER_HASHES = "sender_hashes"
"""On a webhook-log row naming several people: each one's hash, as a Binary Set of the hashes'
16 bytes (half the bytes of their hex), for the erasure's scan of the log."""
SENDER_INDEX = "by_sender"
"""Sparse, keys only: every row and item that names exactly one person, by that person's hash,
except the items kept in that person's own partition of the data table (domain/senders.py)."""


class RowStatus:
    QUEUED = "queued"
    """Written, and sent (or to be replayed) to its lane; not finished yet."""
    DONE = "done"
    EXPIRED = "expired"
    FAILED = "failed"
    """Sent to the dead-letter queue as permanent."""
    UNPARSEABLE = "unparseable"
    ABANDONED = "abandoned"
    ERASED = "erased"
    """Emptied by an erasure request: the row keeps only its key, lane, tenant, kind and times, so a
    message still on its way finds it finished and does nothing (domain/erasure/requests.py)."""

    TERMINAL = frozenset({DONE, EXPIRED, FAILED, UNPARSEABLE, ABANDONED, ERASED})


def pending_shard(row_id: str) -> str:
    digest = hashlib.blake2b(row_id.encode(), digest_size=2).digest()
    return f"p{int.from_bytes(digest, 'big') % PENDING_SHARDS}"


def all_pending_shards() -> tuple[str, ...]:
    return tuple(f"p{n}" for n in range(PENDING_SHARDS))
