"""Progress while messages move: count, share, rate, time to go.

Off a terminal it is one line a second at most (what a log or a test reads); on a terminal a bar
drawn by rich, redrawn in place. Either way the clock is the command's own, so tests drive it."""

from __future__ import annotations

from typing import Any

from ops.context import Context
from ops.output import duration

BAR_REDRAW_SECONDS = 0.1


class Progress:
    def __init__(self, ctx: Context, total: int | None, *, verb: str = "moved") -> None:
        self._ctx = ctx
        self._verb = verb
        self._total = total
        self._started = ctx.clock()
        self._last_shown = float("-inf")
        self._last_moved: int | None = None
        self._bar: _Bar | None = _Bar(ctx, total, verb) if ctx.console.terminal else None

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Leave the bar as it last stood (a no-op off a terminal)."""
        if self._bar is not None:
            self._bar.stop()
            self._bar = None

    def show(self, moved: int, total: int | None = None, *, final: bool = False) -> None:
        """At most a line a second while moving; the final count once, unless already on screen."""
        now = self._ctx.clock()
        total = total if total is not None else self._total
        if self._bar is not None:
            self._bar.show(moved, total, self._detail(moved, total, now), now, final=final)
            if final:
                self.close()  # what follows is printed below the bar, not drawn over
            return
        if final and moved == self._last_moved:
            return
        if not final and now - self._last_shown < 1.0:
            return
        self._last_shown = now
        self._last_moved = moved
        parts = [f"{self._verb} {moved}" + (f" of {total} ({100 * moved // total}%)" if total else "")]
        self._ctx.console.line("  " + ", ".join([*parts, self._detail(moved, total, now)]))

    def _detail(self, moved: int, total: int | None, now: float) -> str:
        elapsed = now - self._started
        parts = []
        if elapsed > 0 and moved:
            rate = moved / elapsed
            parts.append(f"{rate:.1f} msg/s")
            if total and moved < total:
                parts.append(f"about {duration((total - moved) / rate)} to go")
        parts.append(f"{duration(elapsed)} elapsed")
        return ", ".join(parts)


class _Bar:
    """rich's progress bar, redrawn when the count changes (at most ten times a second)."""

    def __init__(self, ctx: Context, total: int | None, verb: str) -> None:
        from rich.progress import BarColumn, MofNCompleteColumn, TaskProgressColumn, TextColumn
        from rich.progress import Progress as RichProgress

        self._progress: Any = RichProgress(
            TextColumn(f"  {verb}"),
            BarColumn(),
            MofNCompleteColumn(),
            TaskProgressColumn(),
            TextColumn("{task.fields[detail]}"),
            console=ctx.console.rich,
            auto_refresh=False,
            redirect_stdout=False,
            redirect_stderr=False,
            get_time=ctx.clock,
        )
        self._task = self._progress.add_task(verb, total=total, detail="")
        self._drawn_at = float("-inf")
        self._progress.start()

    def show(self, moved: int, total: int | None, detail: str, now: float, *, final: bool) -> None:
        self._progress.update(self._task, completed=moved, total=total, detail=detail)
        if final or now - self._drawn_at >= BAR_REDRAW_SECONDS:
            self._drawn_at = now
            self._progress.refresh()

    def stop(self) -> None:
        self._progress.refresh()
        self._progress.stop()
