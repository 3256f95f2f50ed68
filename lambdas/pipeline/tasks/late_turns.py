"""ai lane: a message that arrives after a newer one was answered gets a reply of its own.

A turn whose message is older than the conversation's marker is normally superseded: the newer
message's turn reads every unanswered message up to its own, this one included, and answers them
together. That holds only if the newer turn reads the unanswered set after this message was
stamped. A message Meta delivers late (a delivery the door could not take, throttled with a 429
or failed, that Meta retried later; or one of the same whole second as the newer message with a
smaller id) can be stamped after the newer turn read the set, or after it replied: it stayed in
the set, answered by nobody until the customer wrote again.

So an older turn looks further, when the marker's own turn has answered (the reply's commit notes
`answered` on the marker) or holds its claim (it may have read the set already):
- its message is no longer waiting: a newer turn answered it; superseded;
- it is the newest message still waiting: every newer one was answered without it, so this turn
  answers it (and anything older still waiting), its reply guarded by the marker staying as it
  is (a newer message's turn would answer it instead);
- a newer message still waits and that message's turn holds the claim: it may have read the set
  before this message was stamped; deferred (`newer_turn_in_flight`, no attempt spent) to look
  again once that turn has committed;
- a newer message still waits and its turn has not claimed: that turn will read this message;
  superseded.
Otherwise (the marker's turn has neither answered nor claimed) the newer turn is still to read
the set, and this one is superseded with the single read of the marker, as before.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from decimal import Decimal
from typing import Any

from pipeline.domain.errors import DependencyBusy

ANSWERED = "answered"
"""The marker's attribute naming the message whose turn last answered (or settled) the conversation."""
CLAIM, CLAIM_UNTIL = "turn_claim", "turn_claim_until"
"""The marker's claim of the turn calling the model: `<message id>#<nonce>`, and until when."""


class NewerTurnInFlight(DependencyBusy):
    """A newer message's turn holds its claim and may not have read this message: deferred."""

    deferral = "newer_turn_in_flight"


def needs_a_look(marker: Mapping[str, Any], now: float) -> bool:
    """Whether an older turn must read the unanswered set before calling itself superseded."""
    token = str(marker.get("token", ""))
    return marker.get(ANSWERED) == token or claimed(marker, token, now)


def claimed(marker: Mapping[str, Any], message_id: str, now: float) -> bool:
    """Whether the turn of `message_id` holds an unexpired claim on the marker."""
    claim, until = marker.get(CLAIM), marker.get(CLAIM_UNTIL)
    return (
        isinstance(claim, str)
        and claim.startswith(f"{message_id}#")
        and isinstance(until, int | float | Decimal)  # DynamoDB's numbers read back as Decimal
        and float(until) >= now
    )


def left_behind(marker: Mapping[str, Any], waiting: Sequence[str], mine: str, now: float) -> bool:
    """Whether this older turn must answer its message itself (see the module's rules);
    NewerTurnInFlight when it cannot tell yet. `waiting`: the unanswered set's entries
    (`<seq>#<message id>`, ordered as the messages are), `mine` this turn's entry."""
    if mine not in waiting:
        return False
    newest = max(waiting)
    if newest == mine:
        return True
    if claimed(marker, newest.split("#", 1)[1], now):
        raise NewerTurnInFlight(f"the turn of a newer message holds the claim ({len(waiting)} waiting)")
    return False
