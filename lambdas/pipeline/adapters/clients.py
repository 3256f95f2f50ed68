"""boto3 clients for one handler instance.

Each handler instance gets its own session: sessions are not thread-safe, and the local runtime
runs several instances in one process. Each session carries the function's own credentials when
its variables give them, so instances of different functions in one process each act as their
own role. Retries are standard mode with few attempts, because a
webhook or a consumer batch must answer within its own deadline rather than inside the SDK.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import boto3
from botocore.config import Config

from pipeline.settings import Credentials

_CONFIG = Config(
    retries={"mode": "standard", "max_attempts": 3},
    connect_timeout=2,
    read_timeout=5,
    tcp_keepalive=True,
)


@dataclass
class Clients:
    region: str
    credentials: Credentials | None = field(default=None, repr=False)
    _session: Any = field(default=None, repr=False)
    _cache: dict[str, Any] = field(default_factory=dict, repr=False)

    def get(self, service: str) -> Any:
        client = self._cache.get(service)
        if client is None:
            if self._session is None:
                self._session = boto3.session.Session(region_name=self.region)
            keys = self.credentials
            client = self._session.client(
                service,
                config=_CONFIG,
                aws_access_key_id=keys.access_key_id if keys else None,
                aws_secret_access_key=keys.secret_access_key if keys else None,
                aws_session_token=keys.session_token if keys else None,
            )
            self._cache[service] = client
        return client

    @property
    def dynamodb(self) -> Any:
        return self.get("dynamodb")

    @property
    def sqs(self) -> Any:
        return self.get("sqs")

    @property
    def secretsmanager(self) -> Any:
        return self.get("secretsmanager")
