"""Where a commit cut short takes up again: after the writes that landed, or from the first when
the copy's writes are not the ones its progress describes."""

from __future__ import annotations

from pipeline import schema
from pipeline.domain.consumer import commit_plan
from pipeline.domain.effects import Put, Table


def _row(n: int, standalone: bool = True) -> Put:
    return Put(Table.DATA, {schema.PK: "rows", schema.SK: f"r{n:04d}"}, standalone=standalone)


def test_writes_past_a_transaction_go_ahead_of_the_mark_and_the_final_transaction_is_filled_first():
    many = [_row(n) for n in range(1000)] + [_row(5000, standalone=False)]
    ahead, bound = commit_plan.plan(many)
    assert (len(ahead), len(bound)) == (902, 99)
    assert bound[-1] == _row(5000, standalone=False)
    assert commit_plan.plan(many[:99]) == ([], many[:99])


def test_a_resumed_copy_skips_exactly_the_writes_that_landed():
    writes = [_row(n) for n in range(300)]
    progress = commit_plan.progress_after({"page": 2}, writes, 200)
    assert progress["page"] == 2  # what the task carried stays
    assert commit_plan.resume_point(progress, writes) == 200


def test_a_copy_whose_writes_differ_from_its_progress_starts_from_the_first():
    writes = [_row(n) for n in range(300)]
    progress = commit_plan.progress_after(None, writes, 200)
    reordered = writes[1:] + writes[:1]
    assert commit_plan.resume_point(progress, reordered) == 0
    assert commit_plan.resume_point({commit_plan.COMMITTED: 999}, writes) == 0
    assert commit_plan.resume_point({commit_plan.COMMITTED: True}, writes) == 0
    assert commit_plan.resume_point(None, writes) == 0
