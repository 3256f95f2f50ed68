"""`lanectl local`'s live view on a terminal: the same per-lane rows as the plain view
(console.py), drawn by rich and redrawn in place once a second."""

from __future__ import annotations

import time
from typing import Any, TextIO

from local_aws.alarms import ALARM
from local_aws.runtime import LocalRuntime
from ops.console.console import OUTCOME_COLUMNS, LaneRow, inbox_line, lane_row, noisy_text

EVENTS_SHOWN = 6


def view(runtime: LocalRuntime) -> Any:
    from rich.console import Group
    from rich.table import Table
    from rich.text import Text

    rows = [lane_row(runtime, lane) for lane in runtime.lanes.values()]
    uptime = time.time() - runtime.started_at
    title = Text.assemble(
        (f"lanes-{runtime.env.name}", "bold"),
        f"  up {uptime:.0f}s   API {runtime.api_url}   AWS {runtime.aws_endpoint}",
    )
    lanes = Table(show_edge=False, pad_edge=False, header_style="bold", expand=False)
    lanes.add_column("lane")
    for name in ("queued", "inflight", "delayed", "oldest", "quiet", "noisy", "dlq", "running"):
        lanes.add_column(name, justify="right")
    for name, _ in OUTCOME_COLUMNS:
        lanes.add_column(name, justify="right")
    lanes.add_column("alarms")
    for row in rows:
        lanes.add_row(*_cells(row))
    noisy = [f"{row.lane} {noisy_text(row.noisy)}" for row in rows if row.noisy]
    assert runtime.alarms is not None
    firing = [a.logical_id for a in runtime.alarms.alarms if a.state == ALARM]
    return Group(
        title,
        lanes,
        Text(f"noisy tenants: {'; '.join(noisy) if noisy else 'none'}"),
        Text(f"alarms firing: {', '.join(firing) if firing else 'none'}", style="bold red" if firing else ""),
        Text(inbox_line(runtime)),
        *(Text(f"  {event}", style="dim") for event in runtime.events[-EVENTS_SHOWN:]),
    )


def _cells(row: LaneRow) -> list[Any]:
    from rich.text import Text

    return [
        row.lane,
        str(row.visible),
        str(row.in_flight),
        str(row.delayed),
        f"{row.oldest_age:.1f}s",
        f"{row.quiet_age:.1f}s",
        str(row.noisy_groups),
        Text(str(row.dlq), style="bold red" if row.dlq else ""),
        f"{row.running}/{row.budget}",
        *(str(row.outcomes[name]) for name, _ in OUTCOME_COLUMNS),
        Text(",".join(row.alarms_firing), style="bold red") if row.alarms_firing else Text("ok", style="green"),
    ]


class LiveView:
    """Redrawn on each `update`; nothing redraws it in between (no thread of its own), and it does
    not take over stdout: the runtime routes that to its functions' logs."""

    def __init__(self, out: TextIO) -> None:
        from rich.console import Console
        from rich.live import Live

        self._live = Live(
            console=Console(file=out, highlight=False),
            auto_refresh=False,
            redirect_stdout=False,
            redirect_stderr=False,
        )
        self._live.start()

    def update(self, runtime: LocalRuntime) -> None:
        self._live.update(view(runtime), refresh=True)

    def stop(self) -> None:
        self._live.stop()
