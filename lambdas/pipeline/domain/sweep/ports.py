"""What the sweeper's rules need: the obligation tables' pending rows, the lanes' backlog, and a log."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any, Protocol

from pipeline.domain.sweep.inputs import LaneHistory, LaneView, PendingRow


class RowStore(Protocol):
    source: str

    def oldest_pending_since(self) -> float | None:
        """The age marker of the oldest pending row of any age; None when nothing is pending."""
        ...

    def pages(self, cutoff: float, size: int) -> Iterator[list[PendingRow]]:
        """Rows pending since before `cutoff`, read consistently a page at a time, resuming where
        the last `keep_position` left off."""
        ...

    def keep_position(self, now: float) -> None: ...

    def claim_replays(self, rows: Sequence[PendingRow], now: float) -> list[bool]: ...

    def return_replay(self, row: PendingRow) -> None: ...

    def abandon(self, row: PendingRow, now: float, reason: str) -> bool: ...

    def expire(self, row: PendingRow, now: float) -> bool: ...


class Backlog(Protocol):
    def view(self, lane: str) -> LaneView:
        """The lane's depth now; a depth that was read is also kept as a sighting."""
        ...

    def history(self, lane: str, since: float) -> LaneHistory | None:
        """The lane's history from `since` to now (never more finished than there was), or None
        when it cannot be read."""
        ...


class Log(Protocol):
    def info(self, msg: str, *args: Any, **kwargs: Any) -> Any: ...

    def warning(self, msg: str, *args: Any, **kwargs: Any) -> Any: ...

    def error(self, msg: str, *args: Any, **kwargs: Any) -> Any: ...

    def critical(self, msg: str, *args: Any, **kwargs: Any) -> Any: ...
