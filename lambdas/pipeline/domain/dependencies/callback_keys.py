"""What the reply callback key secret holds, and which keys sign and verify now. Pure: the caller
reads the secret (adapters/callback_key.py) and passes the time.

The secret is one JSON object, rotated as the Meta secret is (docs/RUNBOOK.md#rotating-the-reply-callback-key):

    {"callback_key": "...", "previous_callback_key": "...", "previous_expires_at": "2026-03-01T12:00:00Z"}

The current key signs every reference (domain/dependencies/meta_send.py `callback`); the current
key and, until `previous_expires_at`, the previous one verify. A status about a reply comes back
within minutes, and the references that matter are those of attempts still waiting, so a previous
key needs to outlive the switch-over by the lane's resolve window only; like the Meta secret, one
without a date, or dated more than MAX_PREVIOUS_SECONDS ahead, is refused as a misconfiguration.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from pipeline.domain.errors import TransientError
from pipeline.domain.meta_secret import MAX_PREVIOUS_SECONDS, SecretsMisconfigured, expiry_seconds

KEY_FIELD = "callback_key"
PREVIOUS_FIELD = "previous_callback_key"
EXPIRES_FIELD = "previous_expires_at"
MIN_KEY_CHARACTERS = 32


class CallbackKeyUnavailable(TransientError):
    """The key could not be read, or the secret holds no usable key: no reply can be signed, and
    no status can be checked, until it can."""

    reason = "callback_key_unavailable"


@dataclass(frozen=True)
class CallbackKeys:
    current: bytes
    previous: bytes = b""
    previous_expires_at: float | None = None

    def verifying(self, now: float) -> tuple[bytes, ...]:
        in_force = self.previous and self.previous_expires_at is not None and now < self.previous_expires_at
        return (self.current, self.previous) if in_force else (self.current,)

    @classmethod
    def from_json(cls, text: str, now: float) -> CallbackKeys:
        try:
            raw = json.loads(text)
        except (TypeError, ValueError) as exc:
            raise CallbackKeyUnavailable("the reply callback key secret is not JSON") from exc
        if not isinstance(raw, dict):
            raise CallbackKeyUnavailable("the reply callback key secret is not a JSON object")
        current, previous = raw.get(KEY_FIELD), raw.get(PREVIOUS_FIELD) or ""
        if not isinstance(current, str) or len(current) < MIN_KEY_CHARACTERS or not isinstance(previous, str):
            raise CallbackKeyUnavailable(f"the reply callback key must be at least {MIN_KEY_CHARACTERS} characters")
        if not previous:
            return cls(current.encode())
        if len(previous) < MIN_KEY_CHARACTERS:
            raise CallbackKeyUnavailable(f"{PREVIOUS_FIELD} must be at least {MIN_KEY_CHARACTERS} characters")
        try:
            expires = expiry_seconds(raw.get(EXPIRES_FIELD))
        except SecretsMisconfigured as exc:  # the Meta secret's parser says what is wrong with the time
            raise CallbackKeyUnavailable(str(exc)) from exc
        if expires - now > MAX_PREVIOUS_SECONDS:
            raise CallbackKeyUnavailable(
                f"{EXPIRES_FIELD} is more than {MAX_PREVIOUS_SECONDS // 86400} days away: a previous key is for the "
                "switch-over only"
            )
        return cls(current.encode(), previous.encode(), expires)
