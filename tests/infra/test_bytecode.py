"""Environments that ship bytecode get it compiled for the functions' runtime, used without a look
at the source's times; one whose interpreter is missing fails synthesis instead of shipping source."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

from stacks.app_builder import build_app
from stacks.config.cold_start import CodeStart
from stacks.config.environments import ENVIRONMENTS
from stacks.config.lambda_runtime import PYTHON_RUNTIME
from stacks.constructs import bytecode

UNCHECKED_HASH = 0b01
"""PEP 552's flags word: hash-based, source not checked."""


def test_compiled_modules_are_used_whatever_the_sources_times(tmp_path):
    # Given a package, with a stale bytecode file of another build beside it
    source = tmp_path / "src"
    (source / "pkg" / "__pycache__").mkdir(parents=True)
    (source / "pkg" / "__init__.py").write_text("VALUE = 'compiled'\n")
    (source / "pkg" / "__pycache__" / "stale.cpython-00.pyc").write_bytes(b"not ours")

    # When it is compiled into the asset's directory
    output = tmp_path / "asset"
    bytecode.compile_into(source, output, sys.executable)

    # Then the module has this interpreter's bytecode, marked unchecked, and nothing stale came along
    pyc = Path(importlib.util.cache_from_source(str(output / "pkg" / "__init__.py")))
    assert int.from_bytes(pyc.read_bytes()[4:8], "little") == UNCHECKED_HASH
    assert not (output / "pkg" / "__pycache__" / "stale.cpython-00.pyc").exists()
    # and an import uses it even once the source (and its time) changed, as in Lambda's unzipped asset
    (output / "pkg" / "__init__.py").write_text("VALUE = 'source'\n")
    env = {**os.environ, "PYTHONPATH": str(output), "PYTHONDONTWRITEBYTECODE": "1"}
    found = subprocess.run(
        [sys.executable, "-c", "import pkg; print(pkg.VALUE)"], env=env, capture_output=True, text=True, check=True
    )
    assert found.stdout.strip() == "compiled"


def test_an_environment_shipping_bytecode_compiles_every_module_into_its_asset(tmp_path, monkeypatch):
    # Given prod, which ships bytecode, and an interpreter answering to the runtime's name
    assert ENVIRONMENTS["prod"].code_start is CodeStart.BYTECODE
    monkeypatch.setattr(bytecode.shutil, "which", lambda name: sys.executable if name == PYTHON_RUNTIME else None)

    # When its assets are bundled
    build_app(ENVIRONMENTS["prod"], outdir=str(tmp_path), nag=False, bundle=True)

    # Then the functions' asset holds the door's module and its bytecode for that interpreter
    [asset] = [p for p in tmp_path.glob("asset.*") if (p / "pipeline" / "handlers" / "ingress.py").exists()]
    door = asset / "pipeline" / "handlers" / "ingress.py"
    assert Path(importlib.util.cache_from_source(str(door))).exists()


def test_an_environment_shipping_bytecode_without_its_interpreter_fails_synthesis(tmp_path, monkeypatch):
    # Given staging, which ships bytecode, on a machine without the runtime's interpreter
    monkeypatch.setattr(bytecode.shutil, "which", lambda name: None)

    # When its assets are bundled, then synthesis fails naming what is missing
    with pytest.raises(Exception, match=PYTHON_RUNTIME.replace(".", r"\.")):
        build_app(ENVIRONMENTS["staging"], outdir=str(tmp_path), nag=False, bundle=True)


def test_an_environment_shipping_source_needs_no_interpreter(tmp_path, monkeypatch):
    # Given dev, whose deploys run from developers' machines, without the runtime's interpreter
    assert ENVIRONMENTS["dev"].code_start is CodeStart.SOURCE
    monkeypatch.setattr(bytecode.shutil, "which", lambda name: None)

    # When its assets are bundled, then synthesis succeeds with the sources as they are
    app, _ = build_app(ENVIRONMENTS["dev"], outdir=str(tmp_path), nag=False, bundle=True)
    app.synth()
    assert not list(tmp_path.glob("asset.*/pipeline/handlers/__pycache__"))
