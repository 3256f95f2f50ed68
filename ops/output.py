"""What the CLI prints, and where it goes (tests capture it).

Off a terminal (a pipe, a file, a test's capture) output is plain text: lines, and tables as
columns padded with spaces, which scripts and tests read; `--output json` gives scripts a
document instead. On a terminal, tables, progress and live views are drawn by rich.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, TextIO

TEXT, JSON = "text", "json"
OUTPUTS = (TEXT, JSON)


def duration(seconds: float | None) -> str:
    """`42s`, `3m05s`, `2h14m`, `3d04h`; `-` for unknown."""
    if seconds is None:
        return "-"
    total = max(0, round(seconds))
    if total < 60:
        return f"{total}s"
    minutes, secs = divmod(total, 60)
    if minutes < 60:
        return f"{minutes}m{secs:02d}s"
    hours, minutes = divmod(minutes, 60)
    if hours < 48:
        return f"{hours}h{minutes:02d}m"
    days, hours = divmod(hours, 24)
    return f"{days}d{hours:02d}h"


def money(dollars: float) -> str:
    return f"${dollars:,.2f}"


@dataclass(frozen=True)
class Table:
    headers: Sequence[str]
    rows: Sequence[Sequence[object]]
    right: Sequence[int] = ()
    """Columns aligned right (numbers)."""

    def plain(self) -> list[str]:
        """Columns padded to their widest cell, two spaces apart."""
        cells = [[str(h) for h in self.headers], *[[str(c) for c in row] for row in self.rows]]
        widths = [max(len(row[i]) for row in cells) for i in range(len(self.headers))]
        lines = []
        for row in cells:
            parts = [cell.rjust(widths[i]) if i in self.right else cell.ljust(widths[i]) for i, cell in enumerate(row)]
            lines.append("  ".join(parts).rstrip())
        return lines

    def rich(self) -> Any:
        from rich import box
        from rich.table import Table as RichTable

        drawn = RichTable(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False, header_style="bold")
        for index, header in enumerate(self.headers):
            drawn.add_column(str(header), justify="right" if index in self.right else "left")
        for row in self.rows:
            drawn.add_row(*(str(cell) for cell in row))
        return drawn


def table(headers: Sequence[str], rows: Sequence[Sequence[object]], *, right: Sequence[int] = ()) -> Table:
    return Table(tuple(headers), tuple(tuple(row) for row in rows), tuple(right))


def is_terminal(stream: Any) -> bool:
    isatty = getattr(stream, "isatty", None)
    try:
        return bool(isatty()) if isatty else False
    except ValueError:  # a closed stream
        return False


@dataclass
class Console:
    out: TextIO = field(default_factory=lambda: sys.stdout)
    err: TextIO = field(default_factory=lambda: sys.stderr)

    @cached_property
    def terminal(self) -> bool:
        return is_terminal(self.out)

    @cached_property
    def rich(self) -> Any:
        """rich's console on `out`; draw with it only when `terminal`."""
        from rich.console import Console as RichConsole

        return RichConsole(file=self.out, highlight=False)

    def line(self, text: str = "") -> None:
        self.out.write(text + "\n")
        self.out.flush()

    def lines(self, items: Iterable[str | Table]) -> None:
        for item in items:
            if isinstance(item, Table):
                self.table(item)
            else:
                self.line(item)

    def table(self, drawn: Table) -> None:
        if self.terminal:
            self.rich.print(drawn.rich())
        else:
            self.lines(drawn.plain())

    def json(self, document: Any) -> None:
        """One JSON document on stdout, for scripts; nothing else is printed with it."""
        self.out.write(json.dumps(document, indent=2, ensure_ascii=False, allow_nan=False) + "\n")
        self.out.flush()

    def error(self, text: str) -> None:
        self.err.write(f"lanectl: error: {text}\n")
        self.err.flush()
