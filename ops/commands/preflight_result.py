"""One preflight check's outcome, as `lanectl preflight` prints it."""

from __future__ import annotations

from dataclasses import dataclass

PASS, FAIL, SKIP = "PASS", "FAIL", "SKIP"


@dataclass(frozen=True)
class Result:
    status: str
    name: str
    detail: str
