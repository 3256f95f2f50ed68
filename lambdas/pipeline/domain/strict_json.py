"""JSON as both doors accept it: RFC 8259 only.

Python's `json` also accepts `NaN`, `Infinity` and numbers too large for a float, which it turns
into values it would write back out as tokens no other parser reads; a body holding them would be
accepted here and then fail in every consumer. They are refused at the door instead.
"""

from __future__ import annotations

import json
import math
from typing import Any


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"number out of range: {text[:32]}")
    return value


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


_DECODER = json.JSONDecoder(parse_float=_finite, parse_constant=_reject_constant)
"""One decoder for every call, as json.loads keeps its own: given options, json.loads builds a new
decoder (and its scanner) per call: about a third of the time to parse a 0.4 KB delivery."""


def loads(text: str) -> Any:
    """Raises ValueError (including json.JSONDecodeError, and Python's limit on integer digits)
    for anything that is not strict JSON, RecursionError for nesting too deep to parse."""
    return _DECODER.decode(text)
