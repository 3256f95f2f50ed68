"""Queueing scenarios on the local runtime, each against a naive baseline in the same run.

`make scenarios` (python -m bench.scenarios) runs all ten and writes bench/REPORT.md with plots
under bench/report/; tests/scenarios runs a small version of each and asserts the direction of
each difference. Every scenario module has `run(harness, params) -> Result` and `FULL`/`QUICK`
parameters.
"""

from __future__ import annotations

from bench.scenarios import (
    s01_fairness,
    s02_bulkheads,
    s03_poison,
    s04_dependency,
    s05_spike,
    s06_lost_enqueue,
    s07_lease_expiry,
    s08_duplicates,
    s09_paced_recovery,
    s10_cost,
)

SCENARIOS = (
    s01_fairness,
    s02_bulkheads,
    s03_poison,
    s04_dependency,
    s05_spike,
    s06_lost_enqueue,
    s07_lease_expiry,
    s08_duplicates,
    s09_paced_recovery,
    s10_cost,
)
