"""Times that come from outside as epoch numbers: seconds or milliseconds, told apart by size.

Meta stamps WhatsApp's messages and statuses in seconds (as a string), and Messenger's and
Instagram's `messaging` events in milliseconds; a product posting `ai.inbound` jobs passes on
whichever it got. A time read in the wrong unit is off by a factor of 1,000: seconds read as
milliseconds fall in 1970, milliseconds read as seconds in the year 55,000, where a conversation's
turn marker (tasks/ai.py) would outrank every later message until it expires. No time in seconds
reaches `MILLISECONDS_FROM` before the year 5138, and milliseconds passed it in 1973, so the size
says the unit.
"""

from __future__ import annotations

import math
from typing import Any

MILLISECONDS_FROM = 100_000_000_000
FUTURE_SLACK_SECONDS = 300.0
"""How far ahead of our clock a sender's time may be before it is refused: clock skew, not more."""


def seconds(value: Any) -> float | None:
    """Seconds since the epoch from a number, or a string of one, in seconds or milliseconds. None
    for anything else: missing, empty, not a number, not positive."""
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        return None
    try:
        number = float(value)
    except ValueError:
        return None
    if not math.isfinite(number) or number <= 0:
        return None
    return number / 1000.0 if number >= MILLISECONDS_FROM else number


def too_far_ahead(at: float, now: float) -> bool:
    return at > now + FUTURE_SLACK_SECONDS
