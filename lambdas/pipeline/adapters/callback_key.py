"""The reply callback key from Secrets Manager: signs the references replies are sent with, and
verifies the ones statuses carry back (domain/dependencies/meta_send.py, callback_keys.py).

A read is kept for `cache_seconds`, so a rotation reaches every warm instance within that time. A
reference that does not verify may ask for one early read, at most once per `refresh_seconds`:
the ai lane signs with a key stored moments ago while the messages lane still holds the one
before, and that status must not be lost; a flood of forged references costs at most one read
per instance per `refresh_seconds`. A failed read is not kept and raises CallbackKeyUnavailable (the
record is retried), so a status is never taken for forged because the key was out of reach.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from pipeline.domain.dependencies.callback_keys import CallbackKeys, CallbackKeyUnavailable
from pipeline.domain.dependencies.meta_send import CallbackRef, callback, read_callback

CACHE_SECONDS = 60.0
REFRESH_SECONDS = 10.0


class ReplyCallbacks:
    def __init__(
        self,
        client: Any,
        secret_arn: str,
        clock: Callable[[], float],
        *,
        cache_seconds: float = CACHE_SECONDS,
        refresh_seconds: float = REFRESH_SECONDS,
    ) -> None:
        self._client = client
        self._arn = secret_arn
        self._clock = clock
        self._cache_seconds = cache_seconds
        self._refresh_seconds = refresh_seconds
        self._keys: CallbackKeys | None = None
        self._read_at = float("-inf")

    def sign(self, ref: CallbackRef) -> str:
        return callback(ref, self._current().current)

    def verify(self, value: str) -> CallbackRef | None:
        """The attempt `value` names when our key signed it, or None."""
        found = read_callback(value, self._current().verifying(self._clock()))
        if found is None and self._clock() - self._read_at >= self._refresh_seconds:
            found = read_callback(value, self._read().verifying(self._clock()))
        return found

    def _current(self) -> CallbackKeys:
        if self._keys is None or self._clock() - self._read_at >= self._cache_seconds:
            return self._read()
        return self._keys

    def _read(self) -> CallbackKeys:
        now = self._clock()
        try:
            text = self._client.get_secret_value(SecretId=self._arn)["SecretString"]
        except (ClientError, BotoCoreError, KeyError) as exc:
            raise CallbackKeyUnavailable(f"the reply callback key could not be read: {type(exc).__name__}") from exc
        self._keys, self._read_at = CallbackKeys.from_json(text, now), now
        return self._keys
