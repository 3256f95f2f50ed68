"""Queueing scenarios on the local runtime, each against a naive baseline in the same run.

`make scenarios` (python -m bench.scenarios) runs all of them and writes bench/REPORT.md with plots
under bench/report/; tests/scenarios runs a small version of each and asserts the direction of
each difference. Every scenario module has `run(harness, params) -> Result` and `FULL`/`QUICK`
parameters.

The scenarios are the modules named `sNN_<topic>.py` here, numbered by NN: adding a file adds a
scenario, and tests/scenarios checks that each one has its test.
"""

from __future__ import annotations

import re
from importlib import import_module
from pathlib import Path
from types import ModuleType

_NAMED = re.compile(r"s(\d\d)_\w+")


def _scenarios() -> dict[int, ModuleType]:
    found = {}
    for path in sorted(Path(__file__).parent.glob("s[0-9][0-9]_*.py")):
        match = _NAMED.fullmatch(path.stem)
        if match:
            found[int(match.group(1))] = import_module(f"{__name__}.{path.stem}")
    return found


SCENARIOS: dict[int, ModuleType] = _scenarios()
"""Every scenario by its number."""
