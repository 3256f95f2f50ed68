"""One progress line per second while messages move: count, share, rate, time to go."""

from __future__ import annotations

from ops.context import Context
from ops.output import duration


class Progress:
    def __init__(self, ctx: Context, total: int | None) -> None:
        self._ctx = ctx
        self._total = total
        self._started = ctx.clock()
        self._last_shown = float("-inf")
        self._last_moved: int | None = None

    def show(self, moved: int, total: int | None = None, *, final: bool = False) -> None:
        """At most a line a second while moving; the final count once, unless already on screen."""
        now = self._ctx.clock()
        if final and moved == self._last_moved:
            return
        if not final and now - self._last_shown < 1.0:
            return
        self._last_shown = now
        self._last_moved = moved
        total = total if total is not None else self._total
        elapsed = now - self._started
        parts = [f"moved {moved}" + (f" of {total} ({100 * moved // total}%)" if total else "")]
        if elapsed > 0 and moved:
            rate = moved / elapsed
            parts.append(f"{rate:.1f} msg/s")
            if total and moved < total:
                parts.append(f"about {duration((total - moved) / rate)} to go")
        parts.append(f"{duration(elapsed)} elapsed")
        self._ctx.console.line("  " + ", ".join(parts))
