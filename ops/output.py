"""Plain output: aligned columns, short durations, and where the lines go (tests capture them)."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TextIO


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


def table(headers: Sequence[str], rows: Sequence[Sequence[object]], *, right: Sequence[int] = ()) -> list[str]:
    """Columns padded to their widest cell; the columns in `right` (numbers) aligned right."""
    cells = [[str(h) for h in headers], *[[str(c) for c in row] for row in rows]]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]
    lines = []
    for row in cells:
        parts = [cell.rjust(widths[i]) if i in right else cell.ljust(widths[i]) for i, cell in enumerate(row)]
        lines.append("  ".join(parts).rstrip())
    return lines


@dataclass
class Console:
    out: TextIO = field(default_factory=lambda: sys.stdout)
    err: TextIO = field(default_factory=lambda: sys.stderr)

    def line(self, text: str = "") -> None:
        self.out.write(text + "\n")
        self.out.flush()

    def lines(self, texts: Sequence[str]) -> None:
        for text in texts:
            self.line(text)

    def error(self, text: str) -> None:
        self.err.write(f"lanectl: error: {text}\n")
        self.err.flush()
