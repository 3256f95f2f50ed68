"""What may be a tenant id.

A tenant id becomes the SQS `MessageGroupId` (at most 128 characters from a restricted set) and a
part of state-table keys joined with `#`. An id outside this rule would be accepted at the door
and then fail every send, forever, so both doors refuse or replace it up front.
"""

from __future__ import annotations

import re
from typing import TypeGuard

MAX_LENGTH = 128
_PATTERN = re.compile(r"[A-Za-z0-9_.:@-]{1,128}")

UNKNOWN = "unknown"
"""The tenant of a delivery whose business cannot be told from its payload."""


def is_valid(value: object) -> TypeGuard[str]:
    return isinstance(value, str) and _PATTERN.fullmatch(value) is not None
