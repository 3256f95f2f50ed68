"""Which grants were used: every allowed ask, by the role's logical ID, the action and the
resource's logical name (template.py), counted in memory and, where a directory is given, written
there when the process ends, one file per process. A count may miss an increment when two threads
note the same use at once: it says how often, not exactly how often. A run of the test suite, the scenarios or the
demo each leave their files; `read` merges them, and tests/grants/ compares the union with what
each role is granted."""

from __future__ import annotations

import atexit
import json
import os
import uuid
from collections import Counter
from pathlib import Path

DIRECTORY_VARIABLE = "LANES_GRANT_LEDGER"
"""Where `make test` (and `make demo`, `make scenarios`) ask every process to write its uses."""

Use = tuple[str, str, str]
"""(role logical ID, action, resource logical name)."""

_used: Counter[Use] = Counter()
_directory: Path | None = None
_file = f"{os.getpid()}-{uuid.uuid4().hex[:8]}.json"


def note(role: str, action: str, resource: str) -> None:
    if role:
        _used[(role, action, resource)] += 1


def used() -> Counter[Use]:
    return Counter(_used)


def keep_in(directory: Path | str) -> None:
    """Write this process's uses under `directory` when it exits (idempotent)."""
    global _directory
    first = _directory is None
    _directory = Path(directory)
    _directory.mkdir(parents=True, exist_ok=True)
    if first:
        atexit.register(flush)


def flush() -> None:
    if _directory is None or not _used:
        return
    # The same file each time: a process that flushes twice (at the end of a test session, then
    # at exit) rewrites its own uses.
    (_directory / _file).write_text(json.dumps(sorted([*use, count] for use, count in _used.items())))


def read(directory: Path | str) -> Counter[Use]:
    """Every process's uses under `directory`, added up."""
    found: Counter[Use] = Counter()
    for path in sorted(Path(directory).glob("*.json")):
        for role, action, resource, count in json.loads(path.read_text()):
            found[(role, action, resource)] += count
    return found
