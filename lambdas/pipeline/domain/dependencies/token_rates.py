"""Tokens-a-minute budgets: Bedrock bounds a model's tokens a minute (TPM) as well as its requests,
and refuses a call over it with ThrottlingException "Too many tokens, please wait before trying
again." The arithmetic is the requests budget's (domain/dependencies/rates.py): the minute cut into slices, any
60 s window overlapping at most `slice_count + 1` of them, each slice allowed a share of the limit
with two slices' shares as slack; here a call takes tokens instead of one.

A call's tokens are only known after it, so it reserves the most it can cost before it: its
maxTokens plus an estimate of its input, characters / 4. Four characters a token is the usual
figure for English under the tokenizers Bedrock's text models use; a prompt in another script or
dense with digits takes more tokens a character, which is why the slack exists, and an
overestimate costs only throughput. Bedrock itself counts maxTokens against the quota at the
start of a call and returns the unused part at its end, so the reservation is what it counts.

Settling the difference with the usage Converse answers would cost a second write a call; a
reservation is never less than what is counted, so it is left unsettled: one write a call.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable
from typing import Protocol

from pipeline.domain.dependencies.rates import Rate, slice_at

TOKENS = "tokens"
CHARACTERS_PER_TOKEN = 4


def model_tokens(dependency: str, per_minute: int) -> Rate:
    return Rate(f"tokens#{dependency}", per_minute, 60.0)


def estimate_input_tokens(*texts: str) -> int:
    """At least one token a text, rounded up: an empty prompt still has its role's tokens."""
    return sum(max(1, math.ceil(len(text) / CHARACTERS_PER_TOKEN)) for text in texts)


def reservation(max_tokens: int, *texts: str) -> int:
    if max_tokens < 1:
        raise ValueError(f"maxTokens must be >= 1, got {max_tokens}")
    return max_tokens + estimate_input_tokens(*texts)


class TokenCounter(Protocol):
    def add_tokens(self, key: str, tokens: int, at_most: int, expires_at: float) -> int | None:
        """Add `tokens` to `key` if its count stays at most `at_most` after: the count after,
        or None when they did not fit."""
        ...


class TokenKeeper:
    """One instance's view of its token budgets: a slice that refused a reservation is not asked
    again for one at least as large until it ends (a smaller call may still fit)."""

    def __init__(self, counter: TokenCounter, clock: Callable[[], float]) -> None:
        self._counter = counter
        self._clock = clock
        self._refused: dict[str, tuple[float, int]] = {}
        self._lock = threading.Lock()

    def take(self, rate: Rate, tokens: int) -> bool:
        share = rate.per_slice()
        if tokens < 1:
            raise ValueError(f"rate {rate.key!r}: a call reserves at least one token, got {tokens}")
        if tokens > share:
            # It would never fit: waiting would only hold the message until its retries ran out.
            raise ValueError(f"rate {rate.key!r}: {tokens} tokens exceed a slice's share of {share}")
        now = self._clock()
        here = slice_at(rate, now)
        with self._lock:
            until, smallest = self._refused.get(rate.key, (0.0, 0))
            if until > now and tokens >= smallest:
                return False
        counted = self._counter.add_tokens(here.key, tokens, share, here.ends_at)
        if counted is None:
            with self._lock:
                until, smallest = self._refused.get(rate.key, (0.0, 0))
                least = tokens if until != here.ends_at else min(smallest, tokens)
                self._refused[rate.key] = (here.ends_at, least)
            return False
        return True
