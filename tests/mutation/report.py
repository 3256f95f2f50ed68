"""The mutation score of each domain file, counting only mutants a test could tell apart.

Reads what `mutate.py run` left in mutants/ and `equivalent.toml` beside this file, then prints one
line per file and every mutant that survived, with its diff. A mutant is named in
`equivalent.toml` by a stable identifier (the function and the mutated line: the number mutmut
gives it shifts whenever the function changes), with a one-line reason. An equivalent mutant that
a test kills is reported as a wrong entry, and one that matches no mutant as a stale entry, so
the list cannot quietly grow past what is true.

Usage: report.py [module ...]   (e.g. `retry budgets`; all configured files when none is given)
Exits 1 when a mutant was not run or an entry of the list is wrong or stale.
"""

from __future__ import annotations

import sys
import tomllib
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from mutmut.mutation.data import SourceFileMutationData
from mutmut.mutation.diff_apply import get_diff_for_mutant
from mutmut.stats import status_by_exit_code
from mutmut.utils.file_utils import walk_mutatable_files

EQUIVALENT_FILE = Path(__file__).with_name("equivalent.toml")
DETECTED = frozenset({"killed", "timeout", "caught by type check"})
"""A mutant that makes the tests fail, hang or not type-check has been told apart."""
NOT_RUN = "not checked"
PACKAGE = "pipeline.domain."
CLASS_SEPARATOR = "ǁ"
"""mutmut names a method `xǁClassǁmethod` and a function `x_function`."""


@dataclass
class FileScore:
    path: Path
    total: int = 0
    detected: int = 0
    equivalent: int = 0
    survivors: list[tuple[str, str, str]] = field(default_factory=list)
    """(mutmut's name, status, diff) of each non-equivalent mutant the tests let through."""


def mutant_id(mutant_name: str, diff: str) -> str:
    """`<module>.<function>: <lines removed> -> <lines added>`, e.g.
    `retry.backoff: delay = rng.uniform(0.0, ceiling) -> delay = rng.uniform(1.0, ceiling)`."""
    module, _, mangled = mutant_name.partition("__mutmut_")[0].removeprefix(PACKAGE).rpartition(".")
    function = mangled[2:].replace(CLASS_SEPARATOR, ".")
    body = diff.splitlines()[2:]  # past the ---/+++ header
    removed = " / ".join(line[1:].strip() for line in body if line.startswith("-"))
    added = " / ".join(line[1:].strip() for line in body if line.startswith("+"))
    return f"{module}.{function}: {removed} -> {added}"


def load_equivalents(path: Path = EQUIVALENT_FILE) -> dict[str, str]:
    entries = tomllib.loads(path.read_text("utf-8")).get("equivalent", [])
    equivalents: dict[str, str] = {}
    for entry in entries:
        if not entry.get("reason", "").strip():
            raise SystemExit(f"{path.name}: {entry.get('mutant')!r} has no reason")
        equivalents[entry["mutant"]] = entry["reason"]
    return equivalents


def score(paths: Iterable[Path], equivalents: dict[str, str]) -> tuple[list[FileScore], list[str], set[str]]:
    """Scores per file, problems found, and the equivalents that matched a mutant."""
    scores: list[FileScore] = []
    problems: list[str] = []
    matched: set[str] = set()
    for path in paths:
        data = SourceFileMutationData(path=path)
        data.load()
        file_score = FileScore(path)
        for name, exit_code in sorted(data.exit_code_by_key.items()):
            status = status_by_exit_code[exit_code]
            if status == NOT_RUN:
                problems.append(f"not run: {name}")
                continue
            diff = get_diff_for_mutant(name, path=path)
            identifier = mutant_id(name, diff)
            file_score.total += 1
            if identifier in equivalents:
                matched.add(identifier)
                if status in DETECTED:
                    problems.append(f"listed as equivalent but {status} by the tests: {identifier}")
                    file_score.detected += 1
                else:
                    file_score.equivalent += 1
            elif status in DETECTED:
                file_score.detected += 1
            else:
                file_score.survivors.append((name, status, diff))
        scores.append(file_score)
    return scores, problems, matched


def _row(name: str, total: int, equivalent: int, detected: int) -> str:
    scored = total - equivalent
    percent = 100.0 * detected / scored if scored else 100.0
    return f"{name:<26}{total:>9}{equivalent:>12}{detected:>8}{scored - detected:>10}{percent:>8.1f}%"


def domain_module(path: Path) -> str:
    """`webhook.delivery` for lambdas/pipeline/domain/webhook/delivery.py: the name FILES uses."""
    parts = Path(path).with_suffix("").parts
    return ".".join(parts[parts.index("domain") + 1 :])


def main(argv: list[str]) -> int:
    wanted = set(argv)
    paths = [path for path in walk_mutatable_files() if not wanted or domain_module(path) in wanted]
    if not paths:
        print(f"no configured file is named {sorted(wanted)}")
        return 1
    equivalents = load_equivalents()
    scores, problems, matched = score(paths, equivalents)

    print("\nSurviving mutants (not listed in tests/mutation/equivalent.toml):")
    for file_score in scores:
        for name, status, diff in file_score.survivors:
            print(f"\n{name}  [{status}]\n{diff}")

    print(f"\n{'file':<26}{'mutants':>9}{'equivalent':>12}{'killed':>8}{'survived':>10}{'score':>9}")
    for s in scores:
        print(_row(domain_module(s.path), s.total, s.equivalent, s.detected))
    total = sum(s.total for s in scores)
    print(_row("all", total, sum(s.equivalent for s in scores), sum(s.detected for s in scores)))

    modules = {domain_module(s.path) for s in scores}
    stale = [
        key
        for key in equivalents
        if key not in matched and any(key.split(":")[0].startswith(module + ".") for module in modules)
    ]
    problems.extend(f"listed as equivalent but matches no mutant: {key}" for key in stale)
    for problem in problems:
        print(f"PROBLEM {problem}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
