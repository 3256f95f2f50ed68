"""What the rules need from the outside world, as interfaces the adapters implement: the
consumer's first, then the doors' (the webhook door, the jobs API and the erasure callback).

Keeping these as protocols lets the record pipeline (domain/consumer.py) and the doors
(domain/webhook_door.py, domain/jobs_api.py, domain/erasure_callback.py) stay free of boto3, and
lets a test replace one piece (a task, the vendor, the clock, a table) without touching the rest.
The values and errors that cross these interfaces live beside the rules they belong to.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING, Any, Protocol

# Only annotations name these: importing them here would load every part's rules into every
# function (the door's cold start paid for the jobs API's and the erasure's modules).
if TYPE_CHECKING:
    from pipeline.domain.account_silence import Account
    from pipeline.domain.admission import LaneSnapshot
    from pipeline.domain.budgets import Budget, Grant
    from pipeline.domain.effects import Table, Write
    from pipeline.domain.envelope import Envelope, Outgoing
    from pipeline.domain.erasure import Requested
    from pipeline.domain.jobs import CreateResult, Job, JobRequest
    from pipeline.domain.meta_secret import MetaSecrets
    from pipeline.domain.outcomes import RecordOutcome
    from pipeline.domain.records import Received
    from pipeline.domain.webhook import LogEntry, Recorded
    from pipeline.domain.work import FollowUp

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


class CommitState(StrEnum):
    COMMITTED = "committed"
    DUPLICATE = "duplicate"
    """The done-mark's condition failed: another copy finished first; nothing was written."""
    SUPERSEDED = "superseded"
    """A SUPERSEDE write's condition failed: only the done-mark was written."""
    PARTIAL = "partial"
    """Time ran short: `done` writes landed, and neither the rest nor the mark did."""


@dataclass(frozen=True)
class CommitResult:
    state: CommitState
    skipped: int = 0
    """SKIP writes dropped because their condition failed (stale or repeated)."""
    done: int = 0
    """How many of the writes applied ahead of the mark have landed, counted from the first
    (domain/commit_plan.py), this call's and those it resumed after."""


class Committer(Protocol):
    """`resume_from`: how many writes an earlier copy already applied (skipped here); `room`,
    asked before each call: whether there is time for one more, else the result is PARTIAL."""

    def commit(
        self, mark: Write, writes: Sequence[Write], *, resume_from: int = 0, room: Callable[[], bool] | None = None
    ) -> CommitResult:
        """`done` counts the writes applied ahead of the mark (commit_plan.plan's `ahead`)."""
        ...

    def apply(
        self, writes: Sequence[Write], *, resume_from: int = 0, room: Callable[[], bool] | None = None
    ) -> CommitResult:
        """Standalone writes, each on its own: DUPLICATE when every one was a put whose item was
        there already (another copy did the work), else COMMITTED with the skipped count; `done`
        counts `writes` applied."""
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


class IdentityLinks(Protocol):
    def resolve(self, app_scoped_hash: str) -> tuple[str, ...]:
        """The hashes of the ids the product linked to an app-scoped id (adapters/identity_links.py):
        none when it linked none. Raises IdentityLinksUnavailable."""
        ...


class SenderHasher(Protocol):
    def hash(self, sender: str) -> str:
        """A person's index key (domain/senders.py); the key behind it is read on first use, so a
        failure to read it is raised here, and the record is retried like any other AWS failure."""
        ...


# The doors'


class AccountNotes(Protocol):
    def note(self, accounts: Sequence[Account], now: float) -> int:
        """Stamp when each source account was last heard from, at most once per account per
        interval per instance (adapters/accounts_seen.py); the writes made. Raises on a failure."""
        ...


class Sender(Protocol):
    def send(self, queue_url: str, message: Outgoing) -> str:
        """One message to a lane queue; returns its id. Raises when SQS did not take it."""
        ...


class SecretSource(Protocol):
    """Meta's app secrets, cached per instance (adapters/secrets.py)."""

    def get(self) -> MetaSecrets:
        """Raises SecretsUnavailable, or SecretsMisconfigured for a secret that cannot be used."""
        ...

    def refresh(self) -> MetaSecrets | None:
        """One early read, at most once per interval; None when it is too soon or it failed."""
        ...


class DeliveryLog(Protocol):
    def record(self, entry: LogEntry) -> Recorded:
        """Write the delivery's row unless it exists. Raises WebhookLogUnavailable."""
        ...

    def mark_unsent(self, log_id: str, since: float) -> None:
        """Put the row where the sweeper looks; raises when it could not."""
        ...


class JobStore(Protocol):
    def create(
        self,
        job_id: str,
        request: JobRequest,
        now: float,
        tenant_limit: int,
        expires_at: int,
        sender_hash: str | None = None,
    ) -> CreateResult:
        """The job row and its tenant's count in one transaction. Raises JobsTableUnavailable."""
        ...

    def get(self, job_id: str) -> Job | None: ...

    def mark_unsent(self, job_id: str, at: float) -> None:
        """Say the job's message never reached its lane, so the sweeper replays it after its grace
        period instead of waiting out a busy lane's patience. Raises JobsTableUnavailable."""
        ...


class LaneStates(Protocol):
    def get(self, lane: str) -> LaneSnapshot | None:
        """The lane as admission sees it, or None when it could not be read (admission admits)."""
        ...


class Erasures(Protocol):
    def request(self, sender_hash: str, requested_by: str, *, now: float, linked: tuple[str, ...] = ()) -> Requested:
        """Write an erasure job of `sender_hash` and the `linked` hashes, and send it; or, while
        an erasure of `sender_hash` is pending, answer that one. Raises ErasuresBusy or
        JobsTableUnavailable."""
        ...

    def status(self, code: str) -> dict[str, Any] | None: ...


CORRELATION_ID = "correlation_id"
"""The log field naming what a request is about once it is known: the delivery's or the job's id."""


class Telemetry(Protocol):
    """One request's log lines and metric counts (adapters/api_telemetry.py)."""

    def bind(self, **fields: Any) -> Telemetry: ...

    def info(self, message: str, **fields: Any) -> None: ...

    def warning(self, message: str, **fields: Any) -> None: ...

    def error(self, message: str, **fields: Any) -> None: ...

    def critical(self, message: str, **fields: Any) -> None: ...

    def exception(self, message: str, **fields: Any) -> None: ...

    def count(self, name: str, /, **dimensions: str) -> None: ...

    def count_also_by(self, name: str, also_by: Mapping[str, str], /, **dimensions: str) -> None: ...


class LaneSwitch(Protocol):
    def pause(self) -> None:
        """Stop the lane taking work: its event source mapping disabled, its queue untouched.
        Raises when Lambda did not take it."""
        ...
