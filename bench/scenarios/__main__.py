"""`make scenarios`: run the queueing scenarios on the local runtime and write bench/REPORT.md.

    python -m bench.scenarios [--only 1,5] [--quick] [--report PATH] [--plots DIR] [--findings]

Each scenario prints its figures and a PASS/FAIL line; the exit status is non-zero if any failed.
"""

from __future__ import annotations

import argparse
import sys
import time
import traceback
from pathlib import Path

from bench.scenarios import SCENARIOS
from bench.scenarios.harness import Harness
from bench.scenarios.result import Result

BENCH = Path(__file__).resolve().parents[1]


def _crashed(number: int, module: object, exc: BaseException, seconds: float) -> Result:
    title = str(getattr(module, "__name__", "?")).rsplit(".", 1)[-1]
    result = Result(number=number, title=title, question="(the scenario raised before finishing)", baseline="n/a")
    result.check("the scenario ran to the end", False, f"{type(exc).__name__}: {exc}")
    result.headline = f"crashed: {type(exc).__name__}: {exc}"
    result.caveats = ["```\n" + "".join(traceback.format_exception(exc)).strip()[-3000:] + "\n```"]
    result.seconds = seconds
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.scenarios", description=__doc__.split("\n")[0])
    parser.add_argument("--only", default="", help="comma-separated scenario numbers (default: all)")
    parser.add_argument("--quick", action="store_true", help="the small versions the tests run")
    parser.add_argument("--report", type=Path, default=BENCH / "REPORT.md", help="where to write the report")
    parser.add_argument("--plots", type=Path, default=BENCH / "report", help="directory for the PNG plots")
    parser.add_argument("--no-report", action="store_true", help="print only")
    parser.add_argument("--findings", action="store_true", help="also run the findings' reproductions")
    args = parser.parse_args(argv)
    wanted = {int(n) for n in args.only.split(",") if n.strip()} if args.only else set(SCENARIOS)
    started = time.monotonic()
    harness = Harness(plot_dir=None if args.no_report else args.plots)
    print("synthesizing the local environment (once)...", flush=True)
    _ = harness.synthesized
    results: list[Result] = []
    for number, module in SCENARIOS.items():
        if number not in wanted:
            continue
        print(f"\n== scenario {number}: {module.__doc__.strip().splitlines()[0]}", flush=True)
        began = time.monotonic()
        try:
            params = module.QUICK if args.quick else module.FULL
            result = module.run(harness, params)
        except Exception as exc:
            result = _crashed(number, module, exc, time.monotonic() - began)
        results.append(result)
        print(result.text(), flush=True)
    findings: list[str] = []
    if args.findings:
        from bench.scenarios import findings as extra

        print("\n== findings", flush=True)
        findings = extra.run(harness)
        print("\n".join(findings), flush=True)
    wall = time.monotonic() - started
    passed = sum(1 for r in results if r.passed)
    print(f"\n{passed} of {len(results)} scenarios passed in {wall:.0f} s")
    for r in results:
        print(f"  {'PASS' if r.passed else 'FAIL'} [{r.number}] {r.title}: {r.headline}")
    if not args.no_report:
        from bench.scenarios import report

        path = report.write(args.report, results, wall_seconds=wall, findings=findings)
        print(f"report: {path}")
    return 0 if passed == len(results) else 1


if __name__ == "__main__":
    import os

    from local_aws.iam import ledger

    # `make test`'s and `make demo`'s ledger of which grant each function used, kept here too.
    if os.environ.get(ledger.DIRECTORY_VARIABLE):
        ledger.keep_in(os.environ[ledger.DIRECTORY_VARIABLE])
    sys.exit(main())
