"""The functions' code asset, with bytecode compiled for their runtime where the environment
ships it (stacks/config/cold_start.py says where and why).

Compiled by the interpreter named for the runtime (`python3.14` for `python3.14`), on the machine
that synthesizes, with no Docker: the bytecode's format belongs to one Python version, so no other
interpreter can make it, and synthesis fails with what is missing rather than ship source to an
environment that chose bytecode. `unchecked-hash` bytecode (PEP 552) is used without looking at
the source's modification time, which the asset's zip does not keep.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

import jsii
from aws_cdk import BundlingOptions, DockerImage, ILocalBundling
from aws_cdk import aws_lambda as lambda_

from stacks.config.cold_start import CodeStart

SKIPPED = ("__pycache__", "*.pyc", ".mypy_cache", ".pytest_cache")


class InterpreterMissing(RuntimeError):
    pass


def compile_into(source: Path, output: Path, interpreter: str) -> None:
    """Copy `source` into `output` (no bytecode of this machine's) and compile every module there
    with `interpreter`. Raises CalledProcessError when a module does not compile."""
    shutil.copytree(source, output, ignore=shutil.ignore_patterns(*SKIPPED), dirs_exist_ok=True)
    subprocess.run(  # noqa: S603 (the runtime's interpreter, found on PATH by its name; compileall)
        [interpreter, "-m", "compileall", "-q", "-j", "0", "--invalidation-mode", "unchecked-hash", str(output)],
        check=True,
        capture_output=True,
    )


@jsii.implements(ILocalBundling)
class _CompileWith:
    def __init__(self, source: Path, runtime: str) -> None:
        self._source = source
        self._runtime = runtime

    def try_bundle(self, output_dir: str, *_: Any, **__: Any) -> bool:
        interpreter = shutil.which(self._runtime)
        if interpreter is None:
            raise InterpreterMissing(
                f"this environment ships bytecode for {self._runtime}, and no `{self._runtime}` is on PATH to "
                "compile it: install it, or synthesize an environment whose code_start is source "
                "(stacks/config/cold_start.py)"
            )
        compile_into(self._source, Path(output_dir), interpreter)
        return True


def code_asset(source: Path, runtime: str, start: CodeStart, excludes: list[str]) -> lambda_.Code:
    if start is CodeStart.SOURCE:
        return lambda_.Code.from_asset(str(source), exclude=excludes)
    return lambda_.Code.from_asset(
        str(source),
        exclude=excludes,
        bundling=BundlingOptions(
            # Required by the type, never pulled: the local bundling either compiles or fails.
            image=DockerImage.from_registry("unused-local-bundling-only"),
            local=_CompileWith(source, runtime),
        ),
    )
