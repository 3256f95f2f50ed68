"""What the consumer's rules need from AWS: obligations and items read, dependency budgets, the lane's
queue, drain counts, the record's observer, call times, and the lane's own switch.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol

# Only annotations name these, so importing the ports loads no rules: the door's cold start
# pays only for what it runs.
if TYPE_CHECKING:
    from pipeline.domain.consumer.outcomes import RecordOutcome
    from pipeline.domain.consumer.records import Received
    from pipeline.domain.consumer.work import FollowUp
    from pipeline.domain.dependencies.budgets import Budget, Grant
    from pipeline.domain.effects import Table
    from pipeline.domain.envelope import Envelope

Location = tuple["Table", Mapping[str, Any]]


def location_id(table: Table, key: Mapping[str, Any]) -> str:
    return f"{table}|" + "|".join(f"{name}={key[name]}" for name in sorted(key))


class ObligationStore(Protocol):
    def lookup(self, locations: Sequence[Location]) -> dict[str, Mapping[str, Any] | None]:
        """Consistent reads of rows and markers, keyed by `location_id`; None when absent."""
        ...

    def payload(self, envelope: Envelope, found: Mapping[str, Any] | None) -> Any:
        """The envelope's payload: inline, or loaded from the row its `ref` names."""
        ...


class Reader(Protocol):
    def read(self, table: Table, key: Mapping[str, Any]) -> dict[str, Any] | None: ...


class Budgets(Protocol):
    def acquire(self, budget: Budget, slots: int, hold_seconds: float) -> Grant: ...

    def release(self, grant: Grant) -> None:
        """Never raises: a lease that cannot be given back expires on its own."""
        ...


class LaneQueue(Protocol):
    def send(self, follow_ups: Sequence[FollowUp]) -> None:
        """Raises when any follow-up was not accepted."""
        ...

    def defer(self, items: Sequence[tuple[Envelope, int]]) -> set[int]:
        """Re-send each envelope with its delay; returns the indices SQS did not accept."""
        ...

    def dead_letter(self, body: str, attributes: Mapping[str, str]) -> None: ...

    def set_visibility(self, items: Sequence[tuple[str, int]]) -> int:
        """(receipt handle, seconds) pairs; returns how many SQS refused."""
        ...


class Drain(Protocol):
    def record(self, count: int, now: float) -> None: ...


class Observer(Protocol):
    def outcome(self, received: Received, outcome: RecordOutcome) -> None:
        """The one log line and metric for a record's outcome."""
        ...

    def over_budget(self, received: Received, grant: Grant) -> None:
        """A record an observe-mode budget would have deferred (it proceeds)."""
        ...

    def problem(self, message: str, exc: BaseException | None = None, **fields: Any) -> None:
        """Something outside any single record went wrong and was survived."""
        ...

    def model_tokens(self, input_tokens: int, output_tokens: int) -> None:
        """Tokens a task's model calls spent: summed into the lane's metrics."""
        ...

    def lane_paused(self, reason: str) -> None:
        """The lane stopped itself because of `reason` (a stop-the-lane error's): counted by Lane
        and Reason, which the lane's alarm for that reason reads."""
        ...

    def out_of_time(self, records: int, remaining_seconds: float) -> None:
        """The invocation is ending before its batch settled. Emitted at once, from whichever
        thread notices: nothing after this is sure to run."""
        ...


class CallTimes(Protocol):
    """How long the consumer's own SQS and DynamoDB calls take, which prices its settle reserve."""

    def slowest(self) -> float:
        """The longest call since the last `restart`, in seconds (0.0 when none was made)."""
        ...

    def restart(self) -> float:
        """Start counting afresh; returns the slowest call of the stretch it closes."""
        ...


class LaneSwitch(Protocol):
    def pause(self, reason: str) -> None:
        """Stop the lane taking work: its event source mapping disabled, its queue untouched,
        then the lane's pause mark written (domain/dependencies/lane_pause.py) so the probe may
        resume it. Raises when Lambda did not take it, or the mark was not written."""
        ...
