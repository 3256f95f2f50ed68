"""What the erasure callback needs beyond the shared ports (domain/ports.py): the identity links and
the erasure requests.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

# Only annotations name these, so importing the ports loads no rules: the door's cold start
# pays only for what it runs.
if TYPE_CHECKING:
    from pipeline.domain.erasure.requests import Requested


class IdentityLinks(Protocol):
    def resolve(self, app_scoped_hash: str) -> tuple[str, ...]:
        """The hashes of the ids the product linked to an app-scoped id (adapters/identity_links.py):
        none when it linked none. Raises IdentityLinksUnavailable."""
        ...


class Erasures(Protocol):
    def request(self, sender_hash: str, requested_by: str, *, now: float, linked: tuple[str, ...] = ()) -> Requested:
        """Write an erasure job of `sender_hash` and the `linked` hashes, and send it; or, while
        an erasure of `sender_hash` is pending, answer that one. Raises ErasuresBusy or
        JobsTableUnavailable."""
        ...

    def status(self, code: str) -> dict[str, Any] | None: ...
