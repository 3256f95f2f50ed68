"""Structural rules: runtime code never imports the CDK; infrastructure code reads no context or
environment outside app.py."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _imports(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
    return names


def test_lambdas_never_import_the_cdk():
    offenders = [
        str(path.relative_to(ROOT))
        for path in (ROOT / "lambdas").rglob("*.py")
        if any(name.split(".")[0] in {"aws_cdk", "constructs", "cdk_nag", "stacks"} for name in _imports(path))
    ]
    assert offenders == []


def test_only_app_py_reads_context_or_the_environment():
    forbidden = ("os.environ", "os.getenv", "try_get_context", "node.get_context")
    offenders = [
        f"{path.relative_to(ROOT)}: {needle}"
        for path in (ROOT / "stacks").rglob("*.py")
        for needle in forbidden
        if needle in path.read_text()
    ]
    assert offenders == []
    assert "try_get_context" in (ROOT / "app.py").read_text()


def test_catalogue_and_environments_load_without_the_cdk():
    for path in (ROOT / "stacks" / "config").glob("*.py"):
        assert not any(name.startswith("aws_cdk") for name in _imports(path)), path
    assert not any(name.startswith("aws_cdk") for name in _imports(ROOT / "stacks" / "runtime_env.py"))


def test_lambda_code_needs_only_what_the_lambda_runtime_and_powertools_layer_provide():
    import sys

    provided = set(sys.stdlib_module_names) | {"boto3", "botocore", "aws_lambda_powertools", "pipeline"}
    needed = {
        name.split(".")[0]
        for path in (ROOT / "lambdas").rglob("*.py")
        for name in _imports(path)
        if not name.startswith(".")
    }
    assert needed <= provided, sorted(needed - provided)
