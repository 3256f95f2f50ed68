"""What makes a fair queue's group noisy, the presets the runtime and the scenarios choose from,
and what a fair queue reports. The groups themselves are local_aws/fair_groups.py."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Fairness:
    """The thresholds of noisy-neighbour detection and its clocks."""

    concurrency_share: float = 0.10
    min_in_flight: int = 30
    processing_share: float = 0.10
    recent_seconds: float = 60.0
    """Time constant of the exponentially decayed processing time: what "recent" means. AWS does
    not publish its window; a minute is this emulator's choice."""
    idle_seconds: float = 300.0
    """A noisy group that has sent nothing this long is quiet again (AWS: 5 minutes)."""


AWS = Fairness()
LOCAL = Fairness(recent_seconds=5.0, idle_seconds=20.0)
"""The local environment's clocks are seconds where production's are minutes (its objectives
are 10 to 60 s): the idle time and the processing window shrink with them."""
OFF = Fairness(concurrency_share=1.0, min_in_flight=2**31, processing_share=1.0)
"""No group is ever noisy: the queue serves its messages oldest first, as a standard queue
without fairness would (a baseline to compare fairness against)."""


@dataclass(frozen=True)
class NoisyGroup:
    name: str
    visible: int
    in_flight: int


@dataclass(frozen=True)
class FairCounts:
    """What SQS publishes for a fair queue, plus which groups are noisy (for the live view)."""

    noisy_groups: int
    visible_in_quiet: int
    in_flight_in_quiet: int
    delayed_in_quiet: int
    oldest_quiet_sent_ms: int | None
    noisy: tuple[NoisyGroup, ...] = ()
