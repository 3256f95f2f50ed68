"""`lanectl trace --tenant T --since … [--until …]`: a tenant's deliveries and jobs in a window,
each with its outcome, read from the webhook log and the jobs table (ops/log_selection.py says how
and what it costs: a Scan, not an index). Reads only.

A listing holds no personal data: the rows' bodies and payloads are not read, and tenants are
business accounts and pages. `--show-personal` changes nothing here; `lanectl trace ID` of one
row shows who and what, with that flag.

A webhook row whose task finished stays `queued` (its stored units are its done-mark,
domain/consumer/marks.py), so a listing cannot tell it from one still on its lane without reading every
unit: such rows are shown as `accepted`, and `lanectl trace ID` reads their units.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from ops import log_selection
from ops.context import Context
from ops.errors import USAGE, OpsError
from ops.log_selection import Row, Selected, Selection
from ops.output import JSON, TEXT, table
from pipeline import schema
from pipeline.schema.rows import ATTEMPTS, LAST_ERROR, REPLAYS

DEFAULT_LIMIT = 200


def outcome(row: Row) -> str:
    status = row.status
    if row.source == log_selection.WEBHOOK and status == schema.RowStatus.QUEUED:
        return "pending (send failed)" if schema.PENDING_SHARD in row.item else "accepted"
    return status or "?"


def _view(row: Row) -> dict[str, Any]:
    item = row.item
    last_error = str(item.get(LAST_ERROR) or "")
    view: dict[str, Any] = {
        "source": row.source,
        "id": row.id,
        "taken_at": log_selection.iso(row.taken_at),
        "lane": row.lane,
        "tenant": row.tenant,
        "kind": row.kind,
        "outcome": outcome(row),
        "attempts": int(item.get(ATTEMPTS) or 0),
    }
    if last_error:
        view["last_error"] = last_error.split(":", 1)[0]  # the reason; the text may name AWS resources
    if item.get(REPLAYS):
        view["sweeper_replays"] = int(item["replays"])
    if item.get(schema.GENERATION):
        view["generation"] = int(item[schema.GENERATION])
    return view


def _reads(selected: Selected) -> dict[str, Any]:
    return {source: reads.as_json() for source, reads in selected.reads.items()}


def list_window(
    ctx: Context,
    chosen: Selection,
    *,
    output: str = TEXT,
    limit: int = DEFAULT_LIMIT,
    segments: int = log_selection.DEFAULT_SEGMENTS,
) -> int:
    if chosen.tenant is None:
        raise OpsError("a listing needs --tenant T (an id lists one delivery or job: lanectl trace ID)", USAGE)
    selected = log_selection.select(ctx, chosen, segments=segments)
    counts = Counter(outcome(row) for row in selected.rows)
    shown = selected.rows[:limit]
    if output == JSON:
        ctx.console.json(
            {
                "selection": chosen.as_json(),
                "matched": len(selected.rows),
                "outcomes": dict(counts),
                "rows": [_view(row) for row in shown],
                "reads": _reads(selected),
            }
        )
        return 0
    ctx.console.line(f"tenant {chosen.tenant}: {len(selected.rows)} delivery(ies) and job(s), {chosen.describe()}")
    if shown:
        rows = []
        for row in shown:
            view = _view(row)
            note = view.get("last_error", "")
            if view.get("generation"):
                note = f"replay generation {view['generation']} {note}".strip()
            rows.append(
                (view["taken_at"], row.source, row.id, row.lane, row.kind, view["outcome"], view["attempts"], note)
            )
        ctx.console.table(table(("TAKEN", "SOURCE", "ID", "LANE", "KIND", "OUTCOME", "ATTEMPTS", "NOTE"), rows))
    if len(selected.rows) > len(shown):
        ctx.console.line(f"  … and {len(selected.rows) - len(shown)} more (--limit, or --output json)")
    if counts:
        ctx.console.line("  outcomes: " + ", ".join(f"{name} {count}" for name, count in counts.most_common()))
    if counts.get("accepted"):
        ctx.console.line("  accepted: taken and sent; its stored units say it was processed (lanectl trace ID)")
    for reads in selected.reads.values():
        ctx.console.line(f"  reads: {reads.line()}")
    return 0
