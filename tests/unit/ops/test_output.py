"""What the CLI draws: plain columns and lines off a terminal (what scripts and tests read), and
the same figures drawn by rich on a terminal."""

from __future__ import annotations

import io
import re
from types import SimpleNamespace

from ops.output import Console, table
from ops.progress import Progress

from .support import FakeClock

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def _cells(text: str) -> list[list[str]]:
    """Each drawn line's words, without colours and rules."""
    plain = ANSI.sub("", text)
    rows = [[w for w in line.split() if w not in {"│", "┃"}] for line in plain.splitlines()]
    return [row for row in rows if row and not set("".join(row)) <= set("─━┼╇╋┿")]


def test_off_a_terminal_a_table_is_plain_padded_columns():
    out = io.StringIO()

    Console(out=out).table(table(("LANE", "DEPTH"), [("messages", 2), ("ai", 10)], right=(1,)))

    assert out.getvalue().splitlines() == ["LANE      DEPTH", "messages      2", "ai           10"]


def test_on_a_terminal_a_table_is_drawn_with_the_same_cells():
    out = _Terminal()

    Console(out=out).table(table(("LANE", "DEPTH"), [("messages", 2), ("ai", 10)], right=(1,)))

    assert _cells(out.getvalue()) == [["LANE", "DEPTH"], ["messages", "2"], ["ai", "10"]]
    assert out.getvalue() != "LANE      DEPTH\nmessages      2\nai           10\n"


def test_on_a_terminal_progress_is_a_bar_that_ends_at_the_total():
    # Given a move of three messages shown on a terminal
    out, clock = _Terminal(), FakeClock()
    ctx = SimpleNamespace(console=Console(out=out), clock=clock)

    # When one, then all three have moved
    with Progress(ctx, 3) as progress:  # type: ignore[arg-type]
        clock.now += 1
        progress.show(1)
        clock.now += 2
        progress.show(3, final=True)

    # Then the bar's last drawing says 3 of 3, with the rate, and no plain progress line was printed
    drawn = ANSI.sub("", out.getvalue())
    assert "3/3" in drawn
    assert "100%" in drawn
    assert "1.0 msg/s" in drawn
    assert "moved 3 of 3 (100%)" not in drawn


def test_off_a_terminal_progress_is_a_line_a_second():
    out, clock = io.StringIO(), FakeClock()
    ctx = SimpleNamespace(console=Console(out=out), clock=clock)

    with Progress(ctx, 3) as progress:  # type: ignore[arg-type]
        clock.now += 1
        progress.show(1)
        progress.show(2)  # the same second: not shown
        clock.now += 2
        progress.show(3, final=True)

    assert out.getvalue().splitlines() == [
        "  moved 1 of 3 (33%), 1.0 msg/s, about 2s to go, 1s elapsed",
        "  moved 3 of 3 (100%), 1.0 msg/s, 3s elapsed",
    ]
