"""engagement lane: comment triage.

Each new or edited comment is labelled (question, complaint, spam, other) by the model behind
the `llm` dependency, holding one slot of that shared budget for the calls. The lane's system
prompt asks for one label (stacks/config/models.py); an answer that is not one of them is stored
as `other` (domain/dependencies/model.py). What keeps one page's
campaign from starving every other page is not in here: the lane's queue is an SQS fair queue
(the tenant is the message group), which hands out quiet pages' comments first.

Accepts a Meta delivery (the webhook path) or a single comment object (a job of kind
`comment.triage` with `comment_id`, `message`, `post_id`, `from`).
"""

from __future__ import annotations

from collections.abc import Mapping

from pipeline import schema
from pipeline.domain import stored_text
from pipeline.domain.consumer.work import TaskContext, TaskResult
from pipeline.domain.dependencies.model import triage_label
from pipeline.domain.effects import OnConflict, Put, Table
from pipeline.domain.errors import PermanentError
from pipeline.tasks import meta, privacy
from pipeline.tasks.messages import comment_key

PROMPT_TEXT_LIMIT = 2000
"""Characters of a comment sent to the model: the label is in the first lines, and tokens cost."""


def _comments(payload: object) -> meta.Units:
    """The comments to triage; what else the payload held is counted as ignored, by name."""
    if isinstance(payload, Mapping) and "entry" in payload:
        units = meta.read(payload)
        # The door routes a delivery with messages or statuses to the messages lane; any here are dropped.
        units.ignored.update(
            {"message.on_comment_lane": len(units.messages), "status.on_comment_lane": len(units.statuses)}
        )
        return units
    if isinstance(payload, Mapping) and payload.get("comment_id"):
        single = meta.Units()
        meta.add_comment(payload, single)  # same rules as a feed change
        return single
    raise PermanentError("not_a_comment", "payload is neither a Meta delivery nor a comment")


def triage(
    tenant: str,
    comment: meta.Comment,
    label: str,
    now: float,
    sender_hash: str | None = None,
) -> Put:
    # Triage is stored once; a later (edited) copy does not relabel what a person may have acted on.
    item = {
        **comment_key(tenant, comment.id, sender_hash),
        "post_id": comment.post_id,
        "author": comment.author,
        "text": stored_text.stored(comment.text),
        "label": label,
        "triaged_at": now,
    }
    return Put(
        table=Table.DATA,
        item=item,
        condition="attribute_not_exists(#pk) OR #label = :untriaged",
        names={"#pk": schema.PK, "#label": "label"},
        values={":untriaged": "untriaged"},
        on_conflict=OnConflict.SKIP,
        standalone=True,
    )


def run(ctx: TaskContext) -> TaskResult:
    units = _comments(ctx.payload)
    unique = {(comment.tenant, comment.id): comment for comment in units.comments}
    index = privacy.delivery_index(ctx)
    ignored = {name: count for name, count in units.ignored.items() if count}
    skipped = {"ignored": ignored, "unprocessable": units.unprocessable}
    if not unique:
        return TaskResult(writes=index, detail={"comments": 0, **skipped})
    labels: dict[tuple[str, str], str] = {}
    with ctx.dependency():
        for key, comment in unique.items():
            answer = ctx.vendor.complete(comment.text[:PROMPT_TEXT_LIMIT], timeout=ctx.remaining())
            labels[key] = triage_label(answer)
    writes = (
        tuple(
            # Each comment under its own entry's Page or Instagram account, not the delivery's first.
            triage(
                meta.tenant_of(c, ctx.envelope.tenant),
                c,
                labels[key],
                ctx.now,
                ctx.sender_hash(c.author),
            )
            for key, c in unique.items()
        )
        + index
    )
    counts: dict[str, int] = {}
    for label in labels.values():
        counts[label] = counts.get(label, 0) + 1
    return TaskResult(writes=writes, detail={"comments": len(unique), **skipped, "labels": counts})
