"""What a scenario hands back: its figures beside the baseline's, a verdict, notes and plots."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path


@dataclass(frozen=True)
class Figure:
    name: str
    project: str
    baseline: str
    note: str = ""


@dataclass(frozen=True)
class Check:
    claim: str
    held: bool
    observed: str


@dataclass
class Result:
    number: int
    title: str
    question: str
    """What the scenario asks, in one sentence."""
    baseline: str
    """What the naive baseline is, in one sentence."""
    project_label: str = "this pipeline"
    baseline_label: str = "baseline"
    figures: list[Figure] = field(default_factory=list)
    checks: list[Check] = field(default_factory=list)
    method: list[str] = field(default_factory=list)
    caveats: list[str] = field(default_factory=list)
    plots: list[Path] = field(default_factory=list)
    headline: str = ""
    seconds: float = 0.0
    data: dict[str, object] = field(default_factory=dict)
    """Raw measurements the fast tests assert on."""

    def figure(self, name: str, project: str, baseline: str = "", note: str = "") -> None:
        self.figures.append(Figure(name, project, baseline, note))

    def check(self, claim: str, held: bool, observed: str) -> bool:
        self.checks.append(Check(claim, bool(held), observed))
        return bool(held)

    @property
    def passed(self) -> bool:
        return bool(self.checks) and all(c.held for c in self.checks)

    def failed_checks(self) -> list[Check]:
        return [c for c in self.checks if not c.held]

    def text(self) -> str:
        """The scenario's figures and its PASS/FAIL line, for the terminal."""
        lines = [f"[{self.number}] {self.title}", f"    {self.question}"]
        width = max([len(f.name) for f in self.figures] + [10])
        pw = max([len(f.project) for f in self.figures] + [len(self.project_label)])
        lines.append(f"    {'':<{width}}  {self.project_label:<{pw}}  {self.baseline_label}")
        for f in self.figures:
            lines.append(f"    {f.name:<{width}}  {f.project:<{pw}}  {f.baseline}")
        for c in self.checks:
            lines.append(f"    {'ok  ' if c.held else 'FAIL'} {c.claim}: {c.observed}")
        verdict = "PASS" if self.passed else "FAIL"
        lines.append(f"{verdict}: [{self.number}] {self.title}: {self.headline} ({self.seconds:.0f} s)")
        return "\n".join(lines)
