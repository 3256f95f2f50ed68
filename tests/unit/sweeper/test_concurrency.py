"""Two sweeps that overlap act on a row once: every write is conditional on the replay count read."""

from __future__ import annotations

import logging
import threading
from concurrent.futures import ThreadPoolExecutor

from pipeline.adapters.pending_rows import PendingRows
from pipeline.handlers.sweeper import create_handler

GRACE = 8


def _hold_until_both_have_read(monkeypatch, method: str) -> None:
    """Makes the race certain: neither sweep writes before both have read the row."""
    both_have_read = threading.Barrier(2, timeout=10)
    original = getattr(PendingRows, method)

    def wait_then_write(self, *args):
        both_have_read.wait()
        return original(self, *args)

    monkeypatch.setattr(PendingRows, method, wait_then_write)


def _sweep_together(sweeper_environ, clock) -> list[dict]:
    handlers = [create_handler(sweeper_environ, clock=clock) for _ in range(2)]
    with ThreadPoolExecutor(max_workers=2) as pool:
        futures = [pool.submit(handler, {}, None) for handler in handlers]
        return [future.result(timeout=30) for future in futures]


def test_concurrent_sweeps_replay_a_row_once(rows, queues, sweeper_environ, clock, monkeypatch):
    # Given a lost row, and two sweeper instances that both read it before either writes
    rows.webhook("wh-shared", age=GRACE + 1)
    _hold_until_both_have_read(monkeypatch, "claim_replay")

    # When they sweep at the same time
    reports = _sweep_together(sweeper_environ, clock)

    # Then exactly one replays it, the other sees the claim taken, and one message is queued
    assert sorted((r["webhook"]["replayed"], r["webhook"]["contended"]) for r in reports) == [(0, 1), (1, 0)]
    assert [e.id for e in queues.drain("messages")] == ["wh-shared"]
    assert rows.get("webhook", "wh-shared")["replays"] == 1


def test_concurrent_sweeps_abandon_a_row_once(rows, sweeper_environ, clock, monkeypatch, caplog):
    # Given a row with its replays used up, read by two sweeps at once
    rows.webhook("wh-spent", age=GRACE + 600, replays=3)
    _hold_until_both_have_read(monkeypatch, "abandon")

    # When both decide to abandon it
    reports = _sweep_together(sweeper_environ, clock)

    # Then it is abandoned, counted and logged once
    assert sorted(r["webhook"]["abandoned"] for r in reports) == [0, 1]
    assert [r.id for r in caplog.records if r.levelno == logging.CRITICAL] == ["wh-spent"]
