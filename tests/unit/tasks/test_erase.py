"""The erasure task reads the webhook log page by page, and a log too big for one run is read
whole across runs: each stops while it still has time, saying where the next takes up."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import pytest

from pipeline.domain.consumer.work import Erasable, RowsPage
from pipeline.domain.errors import MoreToDo
from pipeline.tasks import erase
from tests.unit.tasks.payloads import FakeContext, envelope

PERSON = "0123456789abcdef0123456789abcdef"


@dataclass
class PagedLog:
    """An eraser over a log of `pages` (the rows each scan page finds), each page costing
    `page_seconds` of the task's time; it records what it is asked to erase."""

    pages: list[tuple[str, ...]]
    page_seconds: float = 1.0
    clock: list[float] = field(default_factory=lambda: [10.0])
    scanned_from: list[Any] = field(default_factory=list)
    erased: list[str] = field(default_factory=list)
    noted: list[tuple[str, Mapping[str, Any]]] = field(default_factory=list)

    def note_progress(self, job_id: str, progress: Mapping[str, Any]) -> None:
        self.noted.append((job_id, dict(progress)))

    def scan_rows(self, sender_hashes: Sequence[str], start: Mapping[str, Any] | None) -> RowsPage:
        assert list(sender_hashes) == [PERSON]
        self.scanned_from.append(start)
        index = 0 if start is None else int(start["page"])
        self.clock[0] -= self.page_seconds
        following = {"page": index + 1} if index + 1 < len(self.pages) else None
        return RowsPage(log_ids=self.pages[index], resume_from=following)

    def erase_log_rows(self, log_ids: Sequence[str]) -> tuple[int, int]:
        self.erased.extend(log_ids)
        return len(log_ids), 0

    def find(self, sender_hash: str) -> Erasable:
        return Erasable()

    def erase_jobs(self, job_ids: Sequence[str]) -> int:
        return 0

    def delete(self, table: Any, keys: Sequence[Mapping[str, str]]) -> int:
        return len(keys)


@dataclass
class ErasureContext(FakeContext):
    eraser: PagedLog = field(default_factory=lambda: PagedLog([()]))

    def remaining(self) -> float:
        return self.eraser.clock[0]


def _job(progress: Mapping[str, Any] | None = None, *, source: str = "job") -> Any:
    work = envelope("bulk", erase.KIND, source=source, payload={"sender_hash": PERSON})
    return work if progress is None else replace(work, progress=progress)


def test_a_log_that_fits_one_run_is_read_whole_and_every_row_that_names_the_person_is_erased():
    log = PagedLog([("wh-1",), (), ("wh-2", "wh-3")])
    ctx = ErasureContext(_job(), {"sender_hash": PERSON}, lane="bulk", eraser=log)

    result = erase.run(ctx)

    assert log.erased == ["wh-1", "wh-2", "wh-3"]
    assert log.scanned_from == [None, {"page": 1}, {"page": 2}]
    assert result.detail == {"erased": {"webhook_rows": 3, "body_parts": 0}}
    assert result.result == {"webhook_rows": 3, "body_parts": 0}
    [again] = result.follow_ups
    assert again.envelope.id.endswith(erase.AGAIN_SUFFIX)


def test_a_run_stops_while_it_has_time_for_another_page_and_says_where_the_next_takes_up():
    # Given a log of five pages, each a second, and a run with 3.5 s left: after one page 2.5 s
    # remain, less than three times the slowest page
    log = PagedLog([("wh-1",), ("wh-2",), ("wh-3",), ("wh-4",), ("wh-5",)], clock=[3.5])
    ctx = ErasureContext(_job(), {"sender_hash": PERSON}, lane="bulk", eraser=log)

    with pytest.raises(MoreToDo) as stopped:
        erase.run(ctx)

    assert log.erased == ["wh-1"]
    assert stopped.value.progress == {erase.SCAN_FROM: {"page": 1}, erase.ERASED: {"webhook_rows": 1, "body_parts": 0}}

    # When the copy carrying that progress runs with time enough, it reads the rest and no page twice
    log.clock[0] = 60.0
    result = erase.run(replace(ctx, envelope=_job(stopped.value.progress)))
    assert log.erased == ["wh-1", "wh-2", "wh-3", "wh-4", "wh-5"]
    assert log.scanned_from == [None, {"page": 1}, {"page": 2}, {"page": 3}, {"page": 4}]
    assert result.detail == {"erased": {"webhook_rows": 5, "body_parts": 0}}
    assert result.result == {"webhook_rows": 5, "body_parts": 0}


def test_the_second_pass_leaves_the_log_alone():
    log = PagedLog([("wh-1",)])
    ctx = ErasureContext(_job(source="internal"), {"sender_hash": PERSON}, lane="bulk", eraser=log)

    result = erase.run(ctx)

    assert (log.scanned_from, log.erased, result.follow_ups) == ([], [], ())


def test_a_run_that_stops_keeps_its_progress_on_its_job_row_and_says_it_is_alive():
    # Given an erasure job with more log than one run's time
    log = PagedLog([("wh-1",), ("wh-2",), ("wh-3",)], clock=[3.5])
    ctx = ErasureContext(_job(), {"sender_hash": PERSON}, lane="bulk", eraser=log)

    # When it stops part way
    with pytest.raises(MoreToDo) as stopped:
        erase.run(ctx)

    # Then its row got the same progress its continuation carries (and, with it, a heartbeat):
    # the sweeper sees it alive, and a replay of the row resumes rather than starts again
    assert log.noted == [(ctx.envelope.id, stopped.value.progress)]


def test_the_second_pass_has_no_row_to_note_progress_on():
    log = PagedLog([("wh-1",)])
    erase.run(ErasureContext(_job(source="internal"), {"sender_hash": PERSON}, lane="bulk", eraser=log))
    assert log.noted == []
