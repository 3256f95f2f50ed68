"""How a budget acts when it is full: a value of the lane catalogue (policy), which the domain's
budget rules read. Its own module so the catalogue's policy imports nothing from the domain."""

from __future__ import annotations

from enum import StrEnum


class Mode(StrEnum):
    ENFORCE = "enforce"
    OBSERVE = "observe"
    """Count and log what would be deferred, defer nothing: how a new limit is rolled out."""
