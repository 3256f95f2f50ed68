"""The consumer's side of the jobs API's drain rate: finished messages per lane, one update per
batch into the bucket the admission controller reads (see domain/admission.py)."""

from __future__ import annotations

from pipeline.adapters.lane_state import LaneStateReader


class LaneDrain:
    def __init__(self, reader: LaneStateReader, lane: str) -> None:
        self._reader = reader
        self._lane = lane

    def record(self, count: int, now: float) -> None:
        self._reader.record_drained(self._lane, count, now)
