"""Scenario 2's flood: an import's pages, sent as jobs on the bulk lane (this pipeline) or as WhatsApp
history-sync deliveries on the messages lane (the baseline), and how far each has got."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Protocol

from ops.drive import Session


class ImportShape(Protocol):
    """What the import reads of its scenario's parameters (scenario 2's Params has these)."""

    @property
    def importers(self) -> int: ...

    @property
    def pages(self) -> int: ...

    @property
    def rows(self) -> int: ...


def history_sync(waba: str, page: int, rows: int) -> dict[str, Any]:
    """One page of an import shaped as a WhatsApp delivery carrying `rows` messages."""
    from ops.drive import meta_payloads as meta

    delivery = meta.whatsapp_message(waba, f"wamid.{waba}.p{page}.r0", f"history row 0 of page {page}")
    value = delivery["entry"][0]["changes"][0]["value"]
    template = value["messages"][0]
    value["messages"] = [
        {
            **template,
            "id": f"wamid.{waba}.p{page}.r{r}",
            "text": {"body": f"imported row {r} of page {page}: " + "x" * 60},
        }
        for r in range(rows)
    ]
    return delivery


def page_rows(page: int, rows: int) -> list[dict[str, Any]]:
    return [{"id": f"p{page}-r{r}", "text": f"imported row {r} of page {page}: " + "x" * 60} for r in range(rows)]


@dataclass
class Import:
    importers: list[str]
    import_id: str
    same_lane: bool
    shed: int = 0
    server_errors: int = 0

    def send_page(self, s: Session, p: ImportShape, n: int) -> int:
        importer, page = self.importers[n % p.importers], n // p.importers
        if self.same_lane:
            delivered = 0
            for _ in range(20):  # Meta delivers again what the webhook route throttled (429)
                delivered = s.client.deliver(history_sync(importer, page, p.rows)).status
                if delivered != 429:
                    break
                time.sleep(0.5)
            return delivered
        per_importer = -(-p.pages // p.importers)
        body = {
            "import_id": self.import_id,
            "page": page,
            "rows": page_rows(page, p.rows),
            "total_pages": per_importer,
        }
        # A client as the API asks for: one key per page, so a retried page is one job.
        key = f"{self.import_id}-{importer}-{page}"
        status = 0
        for _ in range(20):
            response = s.client.submit_job(
                lane="bulk", kind="import.page", tenant=importer, payload=body, idempotency_key=key
            )
            status = response.status
            if status == 503:
                self.shed += 1  # admission said the bulk lane is behind: come back when it says
                time.sleep(min(5.0, float(response.headers.get("retry-after", "1"))))
            elif status == 429:
                time.sleep(0.5)  # the route's throttle: retried as any client retries a 429
            elif status >= 500:
                self.server_errors += 1  # counted and reported; retried as any client retries a 5xx
                time.sleep(0.2)
            else:
                return status
        return status

    def pages_done(self, s: Session) -> int:
        if self.same_lane:
            return sum(1 for r in s.log.finished(set(self.importers), "messages").values() if r.outcome == "done")
        done = 0
        for importer in self.importers:
            progress = s.item("DataTableName", {"pk": f"import#{importer}#{self.import_id}", "sk": "progress"})
            done += int(progress.get("pages_done", 0)) if progress else 0
        return done

    def finished_at(self, s: Session) -> float:
        lane = "messages" if self.same_lane else "bulk"
        return max((r.at for r in s.log.finished(set(self.importers), lane).values()), default=float("inf"))
