"""The ports more than one part of the domain needs: a lane's sends, a person's hash, Meta's app
secrets, a request's telemetry, and the commit of writes with a done-mark.

Each part keeps its own ports beside its rules (`webhook/ports.py`, `jobs/ports.py`,
`consumer/ports.py`, `erasure/ports.py`, `sweep/ports.py`); the values and errors that cross them
live beside the rules they belong to. As protocols they keep the rules free of boto3 and let a
test replace one piece (a table, a queue, the clock) without touching the rest.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING, Any, Protocol

# Only annotations name these, so importing the ports loads no rules: the door's cold start
# pays only for what it runs.
if TYPE_CHECKING:
    from pipeline.domain.effects import Write
    from pipeline.domain.envelope import Outgoing
    from pipeline.domain.meta_secret import MetaSecrets


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
    (domain/consumer/commit_plan.py), this call's and those it resumed after."""


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


class SenderHasher(Protocol):
    def hash(self, sender: str) -> str:
        """A person's index key (domain/senders.py); the key behind it is read on first use, so a
        failure to read it is raised here, and the record is retried like any other AWS failure."""
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
