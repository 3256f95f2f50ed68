"""The door's cold start with and without bytecode shipped: what compiling `pipeline` at every
cold start costs, the part stacks/constructs/bytecode.py removes.

    .venv/bin/python -m bench.door_bytecode [--runs 9]

Lambda's code directory is read-only, so an asset without `.pyc` files is compiled from source on
every cold start and the result thrown away. This copies `lambdas/` twice into a temporary
directory: once as source only (what the asset was), once compiled the way the bundling compiles
it (`compileall --invalidation-mode unchecked-hash`: the zip's file times are not the sources',
so a timestamp-checked `.pyc` would be refused). Each is imported in fresh processes with
bytecode writing off, alternating with the boto3 baseline of bench/ingress_bench.py (import boto3,
three clients), median of --runs. Third-party packages (boto3, Powertools) load from this
machine's environment, compiled, on both sides.

It measures this interpreter (the one running it), not Lambda's python3.14 or its arm64 cores:
the ratio between the two copies is what carries over, not the milliseconds. It asserts nothing.
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import py_compile
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from bench.ingress_bench import _BASELINE, _INGRESS, FAKE_AWS
from bench.ingress_fixtures import door_environ

ROOT = Path(__file__).resolve().parent.parent


def _copies(into: Path) -> dict[str, Path]:
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    source, compiled = into / "source", into / "compiled"
    shutil.copytree(ROOT / "lambdas", source, ignore=ignore)
    shutil.copytree(ROOT / "lambdas", compiled, ignore=ignore)
    ok = compileall.compile_dir(
        compiled, quiet=1, invalidation_mode=py_compile.PycInvalidationMode.UNCHECKED_HASH, workers=1
    )
    if not ok:
        raise SystemExit("compileall failed")
    return {"source": source, "compiled": compiled}


def _child(code: str, lambdas: Path | None, *args: str) -> list[float]:
    path = [str(ROOT)] + ([str(lambdas)] if lambdas is not None else [])
    env = {**os.environ, **FAKE_AWS, "PYTHONPATH": os.pathsep.join(path), "PYTHONDONTWRITEBYTECODE": "1"}
    out = subprocess.run(
        [sys.executable, "-c", code, *args], env=env, capture_output=True, text=True, check=True, cwd=ROOT
    ).stdout
    return [float(x) for x in out.split()]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.door_bytecode", description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=9, help="fresh processes per figure")
    args = parser.parse_args(argv)
    environ = json.dumps(door_environ())
    with tempfile.TemporaryDirectory() as tmp:
        copies = _copies(Path(tmp))
        _child(_BASELINE, None)  # warm the OS file cache for every side
        for lambdas in copies.values():
            _child(_INGRESS, lambdas, environ)
        baseline: list[float] = []
        total: dict[str, list[float]] = {name: [] for name in copies}
        imported: dict[str, list[float]] = {name: [] for name in copies}
        for _ in range(args.runs):
            baseline.extend(_child(_BASELINE, None))
            for name, lambdas in copies.items():
                whole, just_import = _child(_INGRESS, lambdas, environ)
                total[name].append(whole)
                imported[name].append(just_import)
    base = statistics.median(baseline)
    version = f"{sys.implementation.name} {sys.version.split()[0]}"
    print(f"door cold start, {version} (median of {args.runs} fresh processes)")
    print(f"  import boto3 + 3 clients               {base * 1000:7.1f} ms")
    for name in copies:
        ours = statistics.median(total[name])
        print(
            f"  {name:<8} import {statistics.median(imported[name]) * 1000:7.1f} ms, "
            f"+ create_handler {ours * 1000:7.1f} ms, ratio to the baseline {ours / base:5.2f} x"
        )
    saved = statistics.median(total["source"]) - statistics.median(total["compiled"])
    print(f"  compiling pipeline at cold start costs {saved * 1000:7.1f} ms")


if __name__ == "__main__":
    main()
