"""What the Meta secret holds and which of its keys sign deliveries now. Pure: the caller reads
the secret (adapters/secrets.py) and passes the time.

The secret is one JSON object:

    {"app_secret": "...", "verify_token": "...",
     "previous_app_secret": "...", "previous_expires_at": "2026-03-01T12:00:00Z"}

During a rotation the old app secret moves to `previous_app_secret` with the date it stops being
accepted; past that date only `app_secret` verifies. A previous secret without a date, or dated
further out than `MAX_PREVIOUS_SECONDS`, is refused as a misconfiguration: a previous secret is
for the switch-over, and one that never expires is a second key that never goes away.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from datetime import datetime
from typing import Any

MAX_PREVIOUS_SECONDS = 7 * 24 * 3600
"""The longest a previous secret may stay accepted, counted from when the secret is read."""


class SecretsMisconfigured(RuntimeError):
    """The secret was read but cannot be used: not JSON, no app secret, a bad expiry."""


class SecretsUnavailable(RuntimeError):
    """Secrets Manager could not be read (throttled, unreachable, access denied)."""


def expiry_seconds(value: Any) -> float:
    """Epoch seconds from a number or an ISO 8601 time with its offset (`...Z`, `...+00:00`)."""
    if isinstance(value, bool):
        raise SecretsMisconfigured("previous_expires_at must be a time, not true/false")
    if isinstance(value, int | float):
        if not math.isfinite(value):
            raise SecretsMisconfigured("previous_expires_at must be a finite number of epoch seconds")
        return float(value)
    if not isinstance(value, str):
        raise SecretsMisconfigured("previous_expires_at must be an ISO 8601 time such as 2026-03-01T12:00:00Z")
    try:
        moment = datetime.fromisoformat(value.strip())
    except ValueError as exc:
        raise SecretsMisconfigured(
            f"previous_expires_at {value!r} is not an ISO 8601 time such as 2026-03-01T12:00:00Z"
        ) from exc
    if moment.tzinfo is None:
        raise SecretsMisconfigured(f"previous_expires_at {value!r} has no offset; end it with Z for UTC")
    return moment.timestamp()


@dataclass(frozen=True)
class MetaSecrets:
    app_secret: str
    verify_token: str
    previous_app_secret: str = ""
    previous_expires_at: float | None = None
    """Epoch seconds; the previous secret signs nothing from this moment on."""

    def signing_keys(self, now: float) -> tuple[bytes, ...]:
        keys = [self.app_secret.encode()]
        if self.previous_in_force(now):
            keys.append(self.previous_app_secret.encode())
        return tuple(keys)

    def previous_in_force(self, now: float) -> bool:
        expires = self.previous_expires_at
        return bool(self.previous_app_secret) and expires is not None and now < expires

    @classmethod
    def from_json(cls, text: str, now: float) -> MetaSecrets:
        try:
            raw = json.loads(text)
        except (TypeError, ValueError) as exc:
            raise SecretsMisconfigured("the Meta secret is not JSON") from exc
        if not isinstance(raw, dict):
            raise SecretsMisconfigured("the Meta secret is not a JSON object")
        values = {name: raw.get(name) or "" for name in ("app_secret", "previous_app_secret", "verify_token")}
        if not all(isinstance(v, str) for v in values.values()):
            raise SecretsMisconfigured("the Meta secret's fields must be strings")
        if not values["app_secret"]:
            raise SecretsMisconfigured("the Meta secret has no app_secret: no delivery can be verified")
        expires = raw.get("previous_expires_at")
        if not values["previous_app_secret"]:
            return cls(values["app_secret"], values["verify_token"])
        if expires is None or expires == "":
            raise SecretsMisconfigured(
                "the Meta secret has previous_app_secret but no previous_expires_at: give the time the old "
                "secret stops being accepted (docs/RUNBOOK.md#rotating-the-meta-app-secret)"
            )
        expires_at = expiry_seconds(expires)
        if expires_at - now > MAX_PREVIOUS_SECONDS:
            raise SecretsMisconfigured(
                f"previous_expires_at is more than {MAX_PREVIOUS_SECONDS // 86400} days away: a previous secret "
                "is for the switch-over only"
            )
        return cls(values["app_secret"], values["verify_token"], values["previous_app_secret"], expires_at)
