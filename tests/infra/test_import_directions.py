"""The layering docs/ARCHITECTURE.md promises, read from the code's own import statements.

Inside the product (lambdas/pipeline): the domain decides and imports no adapter, no AWS SDK and no
settings reader (it takes the settings types, never the environment); its parts (the webhook door,
the jobs API, the consumer, the dependencies behind a lane, the sweeper, the erasure) import one
another only along the arrows drawn below, never back, and the values they share sit at the
domain's root and import no part. settings/ (the typed settings the stack and the functions share,
and their reading at cold start) imports nothing above it; nothing in the product imports the
tooling (CDK, the stacks, the CLI, the emulator, the benchmarks). The emulator (local_aws/) does
not import the operator CLI. And no two modules import each other, directly or round a circle, at
import time.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PRODUCT = ROOT / "lambdas"
TOOLING = ("aws_cdk", "constructs", "stacks", "ops", "local_aws", "bench", "tests")
AWS_SDK = ("boto3", "botocore")


def _module_name(path: Path) -> str:
    base = PRODUCT if path.is_relative_to(PRODUCT) else ROOT
    parts = list(path.relative_to(base).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imports(path: Path, *, runtime_only: bool) -> Iterator[str]:
    """Every module an import statement names; with runtime_only, only those run when the module is
    imported (not under TYPE_CHECKING, not inside a function)."""
    tree = ast.parse(path.read_text(), filename=str(path))
    package = _module_name(path).rsplit(".", 1)[0] if path.name != "__init__.py" else _module_name(path)

    def visit(nodes: list[ast.stmt], top: bool) -> Iterator[str]:
        for node in nodes:
            if isinstance(node, ast.Import):
                if top or not runtime_only:
                    yield from (alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom):
                if not (top or not runtime_only):
                    continue
                base = node.module or ""
                if node.level:
                    anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join([*anchor, base] if base else anchor)
                yield base
                yield from (f"{base}.{alias.name}" for alias in node.names)
            elif isinstance(node, ast.If) and _is_type_checking(node):
                if not runtime_only:
                    yield from visit(node.body, top)
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                yield from visit(node.body, False)
            elif isinstance(node, (ast.If, ast.Try, ast.With)):
                for block in ("body", "orelse", "finalbody", "handlers"):
                    for child in getattr(node, block, []):
                        yield from visit(child.body if isinstance(child, ast.ExceptHandler) else [child], top)

    yield from visit(tree.body, True)


def _sources(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob("*.py") if "__pycache__" not in p.parts)


def _starts(name: str, prefixes: tuple[str, ...]) -> bool:
    return any(name == p or name.startswith(p + ".") for p in prefixes)


def _offending(folder: str, forbidden: tuple[str, ...]) -> list[str]:
    base = PRODUCT / "pipeline" / folder if folder else PRODUCT
    return [
        f"{path.relative_to(ROOT)} imports {name}"
        for path in _sources(base)
        for name in sorted(set(_imports(path, runtime_only=False)))
        if _starts(name, forbidden)
    ]


@pytest.mark.parametrize(
    ("folder", "forbidden"),
    [
        ("", TOOLING),
        ("domain", ("pipeline.adapters", "pipeline.handlers", "pipeline.tasks", *AWS_SDK)),
        ("settings", ("pipeline.domain", "pipeline.adapters", "pipeline.handlers", "pipeline.tasks", *AWS_SDK)),
        ("adapters", ("pipeline.handlers", "pipeline.tasks")),
        ("tasks", ("pipeline.adapters", "pipeline.handlers", *AWS_SDK)),
        (
            "schema",
            (
                "pipeline.domain",
                "pipeline.adapters",
                "pipeline.handlers",
                "pipeline.tasks",
                "pipeline.settings",
                *AWS_SDK,
            ),
        ),
    ],
    ids=["product-imports-no-tooling", "domain", "settings", "adapters", "tasks", "schema"],
)
def test_each_layer_imports_only_what_is_below_it(folder, forbidden):
    assert _offending(folder, forbidden) == []


SETTINGS = PRODUCT / "pipeline" / "settings"


def _settings_readers() -> set[str]:
    """The settings modules that read a function's environment: environ.py and every module that
    imports it. The rest are the types the stack and the functions share, which the domain takes."""
    modules = {_module_name(p): p for p in _sources(SETTINGS) if p.name != "__init__.py"}
    reader = "pipeline.settings.environ"
    found = {reader} | {name for name, path in modules.items() if reader in set(_imports(path, runtime_only=False))}
    # And what the package hands out from those modules (`from pipeline.settings import lanes`).
    from pipeline import settings

    return found | {f"pipeline.settings.{name}" for name, home in settings._HOME.items() if home in found}


def test_the_domain_takes_settings_types_and_reads_no_environment():
    readers = _settings_readers()
    assert "pipeline.settings.lane_settings" in readers  # the rule finds the readers it is about
    offending = [
        f"{path.relative_to(ROOT)} imports {name}"
        for path in _sources(PRODUCT / "pipeline" / "domain")
        for name in sorted(set(_imports(path, runtime_only=False)))
        if _starts(name, tuple(readers))
    ]
    assert offending == []


def test_the_emulator_does_not_import_the_operator_cli():
    offending = [
        f"{path.relative_to(ROOT)} imports {name}"
        for path in _sources(ROOT / "local_aws")
        for name in sorted(set(_imports(path, runtime_only=False)))
        if _starts(name, ("ops", "bench", "tests"))
    ]
    assert offending == []


def _graph(folders: list[Path], *, runtime_only: bool = True) -> dict[str, set[str]]:
    paths = [p for folder in folders for p in _sources(folder)]
    modules = {_module_name(p): p for p in paths}
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        imported = _imports(path, runtime_only=runtime_only)
        graph[name] = {module for module in imported if module in modules} - {name}
    return graph


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import circle, if any (a package importing its own submodule is not one: the submodule
    does not import the package's body back)."""
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph[node]):
            if nxt.startswith(node + "."):
                continue
            if state.get(nxt) == 1:
                return [*stack[stack.index(nxt) :], nxt]
            if state.get(nxt) is None and (found := visit(nxt)):
                return found
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if state.get(node) is None and (found := visit(node)):
            return found
    return None


def test_no_import_circle_in_the_product_the_emulator_or_the_cli():
    graph = _graph([PRODUCT / "pipeline", ROOT / "stacks", ROOT / "ops", ROOT / "local_aws"])
    assert _cycle(graph) is None


def test_no_circle_hidden_inside_a_function_or_behind_type_checking():
    """An import moved into a function, or under TYPE_CHECKING, only hides a circle from the
    interpreter: the two modules still cannot be understood, or moved, one without the other."""
    folders = [PRODUCT / "pipeline", ROOT / "stacks", ROOT / "ops", ROOT / "local_aws", ROOT / "bench"]
    assert _cycle(_graph(folders, runtime_only=False)) is None


def test_the_circle_finder_finds_a_circle():
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": set()}) is None


def test_no_name_the_settings_package_exports_is_also_one_of_its_modules():
    # The package reads its names lazily; importing a submodule sets the package attribute of the
    # same name to the module, which would shadow a function of that name (settings.lanes).
    from pipeline import settings

    modules = {p.stem for p in (PRODUCT / "pipeline" / "settings").glob("*.py")}
    assert set(settings.__all__) & modules == set()
    assert all(not isinstance(getattr(settings, name), type(settings)) for name in settings.__all__)


DOMAIN = PRODUCT / "pipeline" / "domain"
PART_ARROWS = {
    "webhook": set(),
    "jobs": set(),
    "dependencies": set(),
    "consumer": {"dependencies", "jobs", "webhook"},
    "sweep": {"webhook", "jobs"},
    "erasure": {"jobs"},
}
"""Which parts of the domain each part may import: the consumer runs tasks against the dependencies,
keeps jobs' rows and reads a delivery's stored body; the sweeper knows the lanes a delivery can
wait on and releases an abandoned job's count; an erasure is a job. Nothing imports the consumer,
the sweeper or the erasure."""


def _part_of(module: str) -> str | None:
    """The part a `pipeline.domain.…` module belongs to; None for the shared root."""
    parts = module.split(".")
    return parts[2] if len(parts) > 3 and parts[2] in PART_ARROWS else None


def test_the_domain_parts_are_the_folders_the_arrows_name():
    folders = {p.name for p in DOMAIN.iterdir() if p.is_dir() and p.name != "__pycache__"}
    assert folders == set(PART_ARROWS)


def test_the_domain_parts_import_one_another_only_along_their_arrows():
    offending = []
    for path in _sources(DOMAIN):
        here = _part_of(_module_name(path)) if path.parent != DOMAIN else None
        allowed = PART_ARROWS.get(here, set()) if here else set()
        for name in sorted(set(_imports(path, runtime_only=False))):
            there = _part_of(name) if name.startswith("pipeline.domain.") else None
            if there and there != here and there not in allowed:
                offending.append(f"{path.relative_to(ROOT)} imports {name}")
    assert offending == []


def test_the_consumers_path_for_a_record_runs_one_way():
    # batch -> task_step -> settling: a later step never calls back into an earlier one.
    order = ["batch", "task_step", "settling"]
    offending = []
    for i, step in enumerate(order):
        path = DOMAIN / "consumer" / f"{step}.py"
        earlier = {f"pipeline.domain.consumer.batch.{s}" for s in order[:i]}
        offending += [f"{step} imports {n}" for n in set(_imports(path, runtime_only=False)) if n in earlier]
    assert offending == []
