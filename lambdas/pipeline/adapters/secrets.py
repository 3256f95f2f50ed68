"""Meta's app secrets and verify token, from Secrets Manager, cached per handler instance.

A successful read is kept for `cache_seconds` (60 to 300, from the environment's config), so a
rotation reaches every warm instance within that time. A delivery whose signature does not match
may ask for one early read (`refresh`), at most once per `refresh_seconds` counting every read, so
a delivery signed with a secret stored moments ago is accepted at once while a flood of forged
signatures costs at most one Secrets Manager call per instance per `refresh_seconds`.

A read that fails is not kept. If Secrets Manager is unreachable and a good secret is cached, the
cached one keeps serving (a blip must not turn deliveries into 500s) and the read is tried again
after `retry_seconds`; with nothing cached, or when the secret read is unusable (an operator's
mistake), each request fails fast until `retry_seconds` have passed, without a call per delivery.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from pipeline.domain.meta_secret import MetaSecrets, SecretsMisconfigured, SecretsUnavailable

RETRY_SECONDS = 5.0
DEFAULT_CACHE_SECONDS = 120.0
DEFAULT_REFRESH_SECONDS = 30.0


class MetaSecretSource:
    def __init__(
        self,
        client: Any,
        secret_arn: str,
        clock: Callable[[], float],
        *,
        cache_seconds: float = DEFAULT_CACHE_SECONDS,
        refresh_seconds: float = DEFAULT_REFRESH_SECONDS,
        retry_seconds: float = RETRY_SECONDS,
    ) -> None:
        self._client = client
        self._arn = secret_arn
        self._clock = clock
        self._cache_seconds = cache_seconds
        self._refresh_seconds = refresh_seconds
        self._retry_seconds = retry_seconds
        self._secrets: MetaSecrets | None = None
        self._fresh_until = 0.0
        self._last_read: float | None = None
        self._retry_at = 0.0
        self._failure: tuple[type[Exception], str] | None = None

    def get(self) -> MetaSecrets:
        """The secrets, or SecretsUnavailable / SecretsMisconfigured."""
        now = self._clock()
        if self._secrets is not None and now < self._fresh_until:
            return self._secrets
        if now < self._retry_at:
            if self._secrets is not None:
                return self._secrets
            assert self._failure is not None
            # A fresh exception each time: re-raising one instance would grow its traceback forever.
            kind, message = self._failure
            raise kind(message)
        return self._read(now)

    def refresh(self) -> MetaSecrets | None:
        """Read again now, unless a read happened in the last `refresh_seconds`; None when no read
        was made or it failed (the caller keeps what it has)."""
        now = self._clock()
        if self._last_read is not None and now - self._last_read < self._refresh_seconds:
            return None
        try:
            return self._read(now)
        except (SecretsUnavailable, SecretsMisconfigured):
            return None

    def _read(self, now: float) -> MetaSecrets:
        self._last_read = now
        try:
            secrets = MetaSecrets.from_json(self._fetch(), now)
        except SecretsUnavailable as exc:
            self._retry_at = now + self._retry_seconds
            if self._secrets is not None:
                return self._secrets
            self._failure = (type(exc), str(exc))
            raise
        except SecretsMisconfigured as exc:
            self._retry_at = now + self._retry_seconds
            self._secrets = None
            self._failure = (type(exc), str(exc))
            raise
        self._secrets = secrets
        self._fresh_until = now + self._cache_seconds
        self._retry_at = 0.0
        self._failure = None
        return secrets

    def _fetch(self) -> str:
        try:
            response = self._client.get_secret_value(SecretId=self._arn)
        except (ClientError, BotoCoreError) as exc:
            raise SecretsUnavailable(f"cannot read the Meta secret: {exc}") from exc
        text = response.get("SecretString")
        if text is None:
            raise SecretsMisconfigured("the Meta secret has no SecretString")
        return str(text)


__all__ = ["MetaSecretSource", "MetaSecrets", "SecretsMisconfigured", "SecretsUnavailable"]
