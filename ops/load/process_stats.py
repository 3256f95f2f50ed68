"""Resident memory and CPU time of a process and its children, read from /proc (Linux), and the
process that serves a TCP port on this machine: what a soak watches to say memory stayed flat and
what a webhook costs in CPU."""

from __future__ import annotations

import os
from pathlib import Path

PROC = Path("/proc")


def _rss_of(pid: int) -> int | None:
    try:
        for row in (PROC / str(pid) / "status").read_text().splitlines():
            if row.startswith("VmRSS:"):
                return int(row.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return 0


def children(pid: int) -> list[int]:
    """Every descendant of `pid` (worker processes of the runtime, say)."""
    found: list[int] = []
    frontier = [pid]
    while frontier:
        parent = frontier.pop()
        try:
            tasks = (PROC / str(parent) / "task").iterdir()
            kids = [int(k) for task in tasks for k in (task / "children").read_text().split()]
        except OSError:
            continue
        found.extend(kids)
        frontier.extend(kids)
    return found


def rss_bytes(pid: int) -> int | None:
    """Resident bytes of `pid` and all its descendants; None when `pid` is gone."""
    own = _rss_of(pid)
    if own is None:
        return None
    return own + sum(_rss_of(child) or 0 for child in children(pid))


def cpu_seconds(pid: int) -> float | None:
    """User + system CPU seconds of `pid` and its live descendants; None when `pid` is gone."""
    ticks = os.sysconf("SC_CLK_TCK")
    total = 0.0
    for index, process in enumerate([pid, *children(pid)]):
        try:
            fields = (PROC / str(process) / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            if index == 0:
                return None
            continue
        total += (int(fields[11]) + int(fields[12])) / ticks  # utime, stime
    return total


def serving_pid(port: int) -> int | None:
    """The process listening on 127.0.0.1:`port` (or any address), if this user can see it."""
    inodes = set()
    for table in ("tcp", "tcp6"):
        try:
            rows = (PROC / "net" / table).read_text().splitlines()[1:]
        except OSError:
            continue
        for row in rows:
            fields = row.split()
            local, state, inode = fields[1], fields[3], fields[9]
            if state == "0A" and int(local.rsplit(":", 1)[1], 16) == port:  # 0A: LISTEN
                inodes.add(f"socket:[{inode}]")
    if not inodes:
        return None
    for entry in PROC.iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            for fd in (entry / "fd").iterdir():
                if os.readlink(fd) in inodes:
                    return int(entry.name)
        except OSError:
            continue
    return None
