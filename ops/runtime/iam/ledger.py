"""Which grants were used: every allowed ask, by the role's logical ID, the action and the
resource's logical name (template.py), kept in memory and, where a directory is given, written
there when the process ends, one file per process. A run of the test suite, the scenarios or the
demo each leave their files; `read` merges them, and tests/grants/ compares the union with what
each role is granted."""

from __future__ import annotations

import atexit
import json
import os
import uuid
from pathlib import Path

DIRECTORY_VARIABLE = "LANES_GRANT_LEDGER"
"""Where `make test` (and `make demo`, `make scenarios`) ask every process to write its uses."""

Use = tuple[str, str, str]
"""(role logical ID, action, resource logical name)."""

_used: set[Use] = set()
_directory: Path | None = None
_file = f"{os.getpid()}-{uuid.uuid4().hex[:8]}.json"


def note(role: str, action: str, resource: str) -> None:
    if role:
        _used.add((role, action, resource))


def used() -> frozenset[Use]:
    return frozenset(_used)


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
    (_directory / _file).write_text(json.dumps(sorted(_used)))


def read(directory: Path | str) -> frozenset[Use]:
    found: set[Use] = set()
    for path in sorted(Path(directory).glob("*.json")):
        found.update((role, action, resource) for role, action, resource in json.loads(path.read_text()))
    return frozenset(found)
