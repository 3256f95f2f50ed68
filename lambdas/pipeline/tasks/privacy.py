"""What the tasks add to their writes so an erasure request finds them (domain/senders.py).

Every item about a person says so: it lives in their partition (domain/senders.py), or carries
their `sender_hash`. A delivery is indexed by the door, on its row: `sender_hash` for one person,
`sender_hashes` for several. Only a row without them (naming more than senders.MAX_NAMED_ON_ROW
people, or logged before rows carried them) gets an item per person here, in their partition and
pointing at its row, written with the task's other writes: a write unit per person that a row
carrying the hashes does without (bench/row_hashes.py has the figures).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pipeline import schema
from pipeline.domain import senders
from pipeline.domain.consumer.work import TaskContext
from pipeline.domain.effects import OnConflict, Put, Table

WEBHOOK = "webhook"


def about(ctx: TaskContext, person: str, item: Mapping[str, Any]) -> dict[str, Any]:
    """`item` with the hash of the person it is about, when there is one."""
    sender = ctx.sender_hash(person)
    return dict(item) if sender is None else {**item, schema.SENDER_HASH: sender}


def delivery_index(ctx: TaskContext) -> tuple[Put, ...]:
    """An index item per person for a delivery that names more than one."""
    if ctx.envelope.source != WEBHOOK or ctx.row_names_everyone:
        return ()
    people = senders.people_in_delivery(ctx.payload)
    if len(people) < 2:
        return ()
    writes = []
    for sender in sorted(filter(None, (ctx.sender_hash(person) for person in people))):
        pk, sk = senders.delivery_index_key(sender, ctx.envelope.id)
        writes.append(
            Put(
                table=Table.DATA,
                item={schema.PK: pk, schema.SK: sk},
                condition="attribute_not_exists(#pk)",
                names={"#pk": schema.PK},
                on_conflict=OnConflict.SKIP,
                standalone=True,
            )
        )
    return tuple(writes)
