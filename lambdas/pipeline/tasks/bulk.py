"""bulk lane: imports in pages, each page its own message (`import.page` jobs), and erasures
(`privacy.erase`, tasks/erase.py), which are as patient and as rare.

Paging keeps every message small and every failure small: a bad page is retried or dead-lettered
alone, and the rest of the import carries on. Payload: `import_id`, `page` (0-based),
`rows` (objects with an `id`), optional `total_pages`.

Rows are written whole under their id, so re-applying a page changes nothing (`standalone`: a page
larger than one transaction may commit in chunks). The import's progress counter is not like
that (it adds), which is exactly why it commits in the same transaction as the done-mark: a
redelivered page counts once.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pipeline import schema
from pipeline.domain.consumer.work import TaskContext, TaskResult
from pipeline.domain.effects import Put, Table, Update, Write
from pipeline.domain.errors import PermanentError
from pipeline.tasks import erase

PAGE = "import.page"


def import_pk(tenant: str, import_id: str) -> str:
    return f"import#{tenant}#{import_id}"


def progress_key(tenant: str, import_id: str) -> dict[str, str]:
    return {schema.PK: import_pk(tenant, import_id), schema.SK: "progress"}


def _page(payload: Any) -> tuple[str, int, list[Mapping[str, Any]], int | None]:
    if not isinstance(payload, Mapping):
        raise PermanentError("bad_page", "payload must be an object")
    import_id, page, rows = payload.get("import_id"), payload.get("page"), payload.get("rows")
    total = payload.get("total_pages")
    problems = []
    if not isinstance(import_id, str) or not import_id:
        problems.append("import_id must be a non-empty string")
    if not isinstance(page, int) or isinstance(page, bool) or page < 0:
        problems.append("page must be an integer >= 0")
    if not isinstance(rows, list) or not all(isinstance(r, Mapping) and r.get("id") not in (None, "") for r in rows):
        problems.append("rows must be a list of objects, each with an id")
    if total is not None and (not isinstance(total, int) or isinstance(total, bool) or total < 1):
        problems.append("total_pages must be an integer >= 1")
    if problems:
        raise PermanentError("bad_page", "; ".join(problems))
    return str(import_id), int(page), list(rows), total  # type: ignore[arg-type]


def run(ctx: TaskContext) -> TaskResult:
    if ctx.envelope.kind == erase.KIND:
        return erase.run(ctx)
    if ctx.envelope.kind != PAGE:
        raise PermanentError("unknown_kind", f"the bulk lane runs {PAGE} and {erase.KIND}, not {ctx.envelope.kind}")
    import_id, page, rows, total = _page(ctx.payload)
    tenant = ctx.envelope.tenant
    by_id = {str(row["id"]): row for row in rows}  # last copy of a repeated id wins, as a re-import would
    writes: list[Write] = [
        Put(
            table=Table.DATA,
            item={
                schema.PK: import_pk(tenant, import_id),
                schema.SK: f"row#{row_id}",
                "fields": dict(row),
                "page": page,
                "imported_at": ctx.now,
            },
            standalone=True,
        )
        for row_id, row in by_id.items()
    ]
    values: dict[str, Any] = {":one": 1, ":rows": len(by_id), ":now": ctx.now}
    expression = "ADD #pages :one, #rows :rows SET #updated = :now"
    names = {"#pages": "pages_done", "#rows": "rows_done", "#updated": "updated_at"}
    if total is not None:
        expression += ", #total = :total"
        names["#total"] = "total_pages"
        values[":total"] = total
    writes.append(Update(Table.DATA, progress_key(tenant, import_id), expression, names=names, values=values))
    return TaskResult(
        writes=tuple(writes),
        detail={"import_id": import_id, "page": page, "rows": len(by_id)},
        result={"rows": len(by_id)},
    )
