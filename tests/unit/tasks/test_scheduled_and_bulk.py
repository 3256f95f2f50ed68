"""scheduled lane: ticks that expire at their cadence; bulk lane: imports one page per message."""

from __future__ import annotations

import time
from datetime import UTC, datetime

import pytest

from pipeline import schema
from pipeline.domain.errors import PermanentError
from pipeline.tasks import bulk, scheduled
from tests.unit.consumer.handler_output import log_lines
from tests.unit.tasks.payloads import FakeContext, envelope


def _tick_body(tick_id: str, created: datetime) -> str:
    """A tick as the EventBridge rule writes it: the event time as ISO-8601 text."""
    stamp = created.strftime("%Y-%m-%dT%H:%M:%SZ")
    return (
        f'{{"id":"tick-{tick_id}","lane":"scheduled","tenant":"system","kind":"scoring.tick",'
        f'"source":"internal","created_at":"{stamp}","payload":{{"scheduled_for":"{stamp}"}}}}'
    )


def test_a_tick_writes_its_record_and_moves_the_heartbeat(lane):
    h = lane("scheduled")
    now = datetime.now(UTC)
    h.send_raw(_tick_body("e1", now))
    response, _ = h.poll(h.handler())
    assert response == {"batchItemFailures": []}
    beat = h.data("heartbeat#scheduled", "scoring.tick")
    assert beat["last_tick"] == "tick-e1"
    assert len(h.data_items("tick#scoring.tick")) == 1


def test_a_tick_that_waited_out_its_cadence_is_dropped(lane, caplog):
    # Given a tick from 10 s ago on a lane whose ticks come every 5 s
    h = lane("scheduled")
    h.send_raw(_tick_body("late", datetime.fromtimestamp(time.time() - 10, UTC)))
    h.poll(h.handler())
    # Then the next tick covers it: nothing ran
    assert h.data_items("tick#scoring.tick") == []
    assert [line["outcome"] for line in log_lines(caplog) if line["message"].startswith("record")] == ["expired"]


def test_the_heartbeat_never_moves_back_for_a_tick_processed_late(lane):
    # Given the newer of two ticks processed first (both still within their cadence)
    h = lane("scheduled")
    handler = h.handler()
    h.send_raw(_tick_body("newer", datetime.fromtimestamp(time.time(), UTC)))
    h.poll(handler)
    h.send_raw(_tick_body("older", datetime.fromtimestamp(time.time() - 2, UTC)))
    h.poll(handler)
    # Then both ran, and the heartbeat still names the newer one
    assert len(h.data_items("tick#scoring.tick")) == 2
    assert h.data("heartbeat#scheduled", "scoring.tick")["last_tick"] == "tick-newer"


def test_the_scheduled_lane_refuses_work_that_is_not_a_tick():
    with pytest.raises(PermanentError):
        scheduled.run(FakeContext(envelope("scheduled", "report.email"), {}, lane="scheduled"))


def _page(import_id: str, page: int, rows: list[dict], **extra) -> dict:
    return {"import_id": import_id, "page": page, "rows": rows, **extra}


def test_import_pages_write_their_rows_and_count_progress_once(lane):
    # Given two pages of one import, the first delivered twice
    h = lane("bulk")
    first = h.job_row(
        "job-p0",
        _page("imp-1", 0, [{"id": "a", "name": "Ann"}, {"id": "b", "name": "Bo"}], total_pages=2),
        tenant="acme",
        kind=bulk.PAGE,
    )
    second = h.job_row("job-p1", _page("imp-1", 1, [{"id": "c", "name": "Cy"}]), tenant="acme", kind=bulk.PAGE)
    h.send(first)
    h.send(first)
    h.send(second)
    handler = h.handler()
    for _ in range(3):
        h.poll(handler, limit=1)
    # Then every row is there once and the progress counts each page once
    items = {i[schema.SK]: i for i in h.data_items(bulk.import_pk("acme", "imp-1"))}
    assert sorted(k for k in items if k.startswith("row#")) == ["row#a", "row#b", "row#c"]
    progress = items["progress"]
    assert (progress["pages_done"], progress["rows_done"], progress["total_pages"]) == (2, 3, 2)
    # And each page's job says how many rows it wrote; the repeated copy changed neither
    assert (h.row("jobs", "job-p0")["result"], h.row("jobs", "job-p1")["result"]) == ({"rows": 2}, {"rows": 1})


def test_a_page_larger_than_one_transaction_commits_whole_and_counts_once(lane):
    h = lane("bulk")
    rows = [{"id": n, "v": n * 1.5} for n in range(180)]
    h.send(h.job_row("job-big", _page("imp-2", 0, rows), tenant="acme", kind=bulk.PAGE))
    response, _ = h.poll(h.handler())
    assert response == {"batchItemFailures": []}
    items = h.data_items(bulk.import_pk("acme", "imp-2"))
    assert len(items) == 181
    progress = next(i for i in items if i[schema.SK] == "progress")
    assert (progress["pages_done"], progress["rows_done"]) == (1, 180)


def test_a_malformed_page_is_dead_lettered_with_every_problem_named(lane):
    h = lane("bulk")
    h.send(
        h.job_row("job-bad", {"import_id": "", "page": -1, "rows": [{"name": "no id"}]}, tenant="acme", kind=bulk.PAGE)
    )
    h.poll(h.handler())
    [dead] = h.dead_letters()
    attributes = {k: v["StringValue"] for k, v in dead["MessageAttributes"].items()}
    assert attributes["reason"] == "bad_page"
    for problem in ("import_id", "page must", "rows must"):
        assert problem in attributes["error"]
    assert h.row("jobs", "job-bad")["status"] == schema.RowStatus.FAILED


def test_repeated_row_ids_in_a_page_become_one_write():
    ctx = FakeContext(
        envelope("bulk", bulk.PAGE), _page("i", 0, [{"id": 1, "v": "old"}, {"id": 1, "v": "new"}]), lane="bulk"
    )
    result = bulk.run(ctx)
    rows = [w for w in result.writes if w.standalone]
    assert [w.item["fields"]["v"] for w in rows] == ["new"]
    assert result.detail["rows"] == 1
