"""AWS's size and count limits that the emulator enforces, and how AWS measures each.

moto lets through requests AWS refuses: a local run could then write an item, send a batch or
deploy a function that the first real deploy or the first real request refuses. The emulator
(ops/runtime/moto_limits.py) refuses them as AWS does, with AWS's error codes and messages, so a
limit is met locally first. The figures and measures here are AWS's own, as documented:

- Lambda: a function's environment variables, as a whole, at most 4 KB (4,096 bytes). Lambda
  measures them as one JSON object, `{"NAME":"value",...}` with no spaces, which its refusal
  quotes back ("String measured: ..."): quotes, colons, commas and the escapes of a JSON value's
  own quotes count, not only the names and values.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

LAMBDA_ENVIRONMENT_BYTES = 4096


def lambda_environment(variables: Mapping[str, Any]) -> str:
    """The string Lambda measures: the variables as compact JSON (a value that is not a string,
    as CloudFormation may pass one, is measured as the string it becomes)."""
    strings = {str(name): value if isinstance(value, str) else json.dumps(value) for name, value in variables.items()}
    return json.dumps(strings, separators=(",", ":"), ensure_ascii=False)


def lambda_environment_bytes(variables: Mapping[str, Any]) -> int:
    return len(lambda_environment(variables).encode("utf-8"))
