"""Exit codes and the one error type commands raise: a message for a person, and a code for a
script (`make deploy` stops on a failed preflight; a cron redrive can tell "nothing to do" from
"could not do it")."""

from __future__ import annotations

OK = 0
FAILED = 1
"""A check failed, or the work started and did not finish (a move task failed, a send refused)."""
USAGE = 2
"""Bad input: unknown environment or lane, a value out of range (argparse uses 2 too)."""
AWS = 3
"""AWS could not be asked: no credentials, no such stack, an endpoint that does not answer."""
NOTHING_TO_DO = 4
"""The dead-letter queue is empty."""
BUSY = 5
"""Someone else is already doing this (a message move task is running)."""
UNCHECKED = 6
"""An outside service could not say (`lanectl meta check`: no token, the token refused, Meta down or
unreachable, an account Meta does not know), and nothing it could say was found wrong."""
INTERRUPTED = 130
"""Ctrl-C: stopped cleanly, and said what had been done."""


class OpsError(Exception):
    def __init__(self, message: str, code: int = FAILED) -> None:
        super().__init__(message)
        self.message = message
        self.code = code
