"""How long a record of each kind takes, as this consumer instance has seen it.

Work with less time left before its deadline than this is dropped unrun. A configured figure is
a planning assumption (the catalogue's `LanePolicy.service_seconds`) and can be off by several times
either way: a model that answers faster than planned would have its callers' work dropped for
nothing, a slower one would start work that cannot finish. So the instance measures each kind's
runs and uses a moving average once it has one.
"""

from __future__ import annotations

WEIGHT = 0.2
"""Of the newest run: a handful of runs move the average, one slow run does not swamp it."""


class ServiceTimes:
    def __init__(self, configured_seconds: float) -> None:
        self._configured = configured_seconds
        self._average: dict[str, float] = {}

    def expected(self, kind: str) -> float:
        return self._average.get(kind, self._configured)

    def observe(self, kind: str, seconds: float) -> None:
        seconds = max(0.0, seconds)
        previous = self._average.get(kind)
        self._average[kind] = seconds if previous is None else previous + WEIGHT * (seconds - previous)
