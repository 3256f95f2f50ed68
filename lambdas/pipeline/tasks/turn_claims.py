"""ai lane: one copy of a turn calls the model.

SQS delivers a message at least once, and a producer's SDK sends a message again when the answer
to a SendMessage that succeeded was lost: a turn can be in the queue twice. Two copies in one
batch run once (the consumer settles the later one as a duplicate), and a copy that arrives after
the other committed finds its done-marker. Two copies taken by two batches at once both found the
marker theirs and both called the model; the send's own claim kept the customer from getting two
replies (tasks/replies.py), but the model was paid twice.

So before its model call a turn claims its message on the conversation's marker: a conditional
update that lands only while the marker still names the turn's message and no other copy of it
holds an unexpired claim. The copy that loses is deferred (`turn_in_progress`, no attempt spent)
and comes back to find the winner's done-marker, or, if the winner died before committing, its
claim expired (the task's limit plus slack, as a lease of the llm budget) and takes the turn over.
A winner whose model call fails gives its claim back, so its own retry is not held off. The
reply's commit checks the claim is still this copy's (tasks/ai.py `_still_newest`): a newer turn,
or a late message's turn, may take over a claim, and of two turns that both called the model only
the holder's reply lands.

Cost: one write to the marker per turn that calls the model; a superseded or settled turn claims
nothing.
"""

from __future__ import annotations

import secrets

from pipeline.domain.consumer.work import TaskContext
from pipeline.domain.effects import OnConflict, Table, Update
from pipeline.domain.errors import DependencyBusy
from pipeline.tasks import late_turns
from pipeline.tasks.conversations import conversation_ref, marker_key

SLACK_SECONDS = 5.0
"""Beyond the task's remaining time, for clocks of two instances that disagree."""


class TurnInProgress(DependencyBusy):
    """Another copy of this turn holds its model call: deferred, costing no attempt."""

    deferral = "turn_in_progress"


def claim(ctx: TaskContext, tenant: str, conversation: str, token: str, *, marker_token: str) -> str:
    """Claims the turn of message `token` for this copy, and returns the claim to give back;
    TurnInProgress when the marker no longer names `marker_token` (`token` itself, or the newer
    message a late turn found answered: tasks/late_turns.py) or another copy holds the turn."""
    mine = f"{token}#{secrets.token_hex(8)}"
    taken = ctx.write_now(
        Update(
            table=Table.STATE,
            key=marker_key(tenant, conversation),
            expression="SET #claim = :claim, #claim_until = :until",
            # `#claim = :claim`: the SDK's retry of this very write, after one that landed but
            # whose answer was lost, is the same claim, not another copy's.
            condition=(
                "#token = :token AND (attribute_not_exists(#claim_until) OR #claim_until < :now"
                " OR NOT begins_with(#claim, :this_turn) OR #claim = :claim)"
            ),
            names={"#token": "token", "#claim": late_turns.CLAIM, "#claim_until": late_turns.CLAIM_UNTIL},
            values={
                ":claim": mine,
                ":until": ctx.now + ctx.remaining() + SLACK_SECONDS,
                ":now": ctx.now,
                ":token": marker_token,
                ":this_turn": f"{token}#",
            },
            on_conflict=OnConflict.SKIP,
        )
    )
    if not taken:
        raise TurnInProgress(f"the turn of {token} in conversation {conversation_ref(tenant, conversation)} is taken")
    return mine


def give_back(ctx: TaskContext, tenant: str, conversation: str, mine: str) -> None:
    """Ends this copy's claim (only its own), after a model call that failed."""
    ctx.write_now(
        Update(
            table=Table.STATE,
            key=marker_key(tenant, conversation),
            expression="REMOVE #claim, #claim_until",
            condition="#claim = :claim",
            names={"#claim": late_turns.CLAIM, "#claim_until": late_turns.CLAIM_UNTIL},
            values={":claim": mine},
            on_conflict=OnConflict.SKIP,
        )
    )
