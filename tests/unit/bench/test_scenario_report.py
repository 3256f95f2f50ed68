"""`make scenarios` writes REPORT.md where it is told, and keeps the sections other runs wrote
(bench/report/*.md) as they were written."""

from __future__ import annotations

from pathlib import Path

from bench.scenarios import report
from bench.scenarios.result import Result


def test_the_report_goes_where_it_is_told_and_the_written_sections_stay_as_written(tmp_path: Path):
    written = tmp_path / "report"
    written.mkdir()
    kept = {
        name: f"## {name}: measured by hand\n\nfigures\n"
        for name in ("auto_reply_soak.md", "independent_load.md", "soak.md")
    }
    for name, text in kept.items():
        (written / name).write_text(text, encoding="utf-8")
    result = Result(number=7, title="Lease expiry", question="how often?", baseline="none")
    result.headline = "measured"

    path = report.write(tmp_path / "REPORT.md", [result], wall_seconds=61)

    assert path == tmp_path / "REPORT.md"
    text = path.read_text(encoding="utf-8")
    assert "| 7 | Lease expiry |" in text
    assert all(f"## {name}: measured by hand" in text for name in kept)
    # and no kept section was written over
    assert {name: (written / name).read_text(encoding="utf-8") for name in kept} == kept
