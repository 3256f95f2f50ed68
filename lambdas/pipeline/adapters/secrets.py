"""Meta's app secrets and verify token, from Secrets Manager, read once per handler instance.

A successful read is kept for the life of the instance (a rotation reaches new instances; the
previous secret keeps old-signed deliveries verifying meanwhile). A failed or unusable read is
not kept: it is retried, but at most once per `retry_seconds`, so a broken secret turns every
webhook into a fast 500 (Meta retries those) without a Secrets Manager call per delivery.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

RETRY_SECONDS = 5.0


class SecretsUnavailable(RuntimeError):
    """Secrets Manager could not be read (throttled, unreachable, access denied)."""


class SecretsMisconfigured(RuntimeError):
    """The secret was read but cannot be used: not JSON, or no app secret."""


@dataclass(frozen=True)
class MetaSecrets:
    app_secret: str
    previous_app_secret: str
    verify_token: str

    def signing_keys(self) -> tuple[bytes, ...]:
        return tuple(s.encode() for s in (self.app_secret, self.previous_app_secret) if s)

    @classmethod
    def from_json(cls, text: str) -> MetaSecrets:
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
        return cls(**values)


class MetaSecretSource:
    def __init__(
        self, client: Any, secret_arn: str, clock: Callable[[], float], retry_seconds: float = RETRY_SECONDS
    ) -> None:
        self._client = client
        self._arn = secret_arn
        self._clock = clock
        self._retry_seconds = retry_seconds
        self._secrets: MetaSecrets | None = None
        self._failure: tuple[float, type[Exception], str] | None = None

    def get(self) -> MetaSecrets:
        """The secrets, or SecretsUnavailable / SecretsMisconfigured."""
        if self._secrets is not None:
            return self._secrets
        now = self._clock()
        if self._failure is not None and now - self._failure[0] < self._retry_seconds:
            # A fresh exception each time: re-raising one instance would grow its traceback forever.
            _, kind, message = self._failure
            raise kind(message)
        try:
            self._secrets = MetaSecrets.from_json(self._read())
        except (SecretsUnavailable, SecretsMisconfigured) as exc:
            self._failure = (now, type(exc), str(exc))
            raise
        self._failure = None
        return self._secrets

    def _read(self) -> str:
        try:
            response = self._client.get_secret_value(SecretId=self._arn)
        except (ClientError, BotoCoreError) as exc:
            raise SecretsUnavailable(f"cannot read the Meta secret: {exc}") from exc
        text = response.get("SecretString")
        if text is None:
            raise SecretsMisconfigured("the Meta secret has no SecretString")
        return str(text)
