"""boto3 clients for one handler instance.

Each handler instance gets its own session: sessions are not thread-safe, and the local runtime
runs several instances in one process. Retries are standard mode with few attempts, because a
webhook or a consumer batch must answer within its own deadline rather than inside the SDK.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import boto3
from botocore.config import Config

_CONFIG = Config(
    retries={"mode": "standard", "max_attempts": 3},
    connect_timeout=2,
    read_timeout=5,
    tcp_keepalive=True,
)


@dataclass
class Clients:
    region: str
    _session: Any = field(default=None, repr=False)
    _cache: dict[str, Any] = field(default_factory=dict, repr=False)

    def get(self, service: str) -> Any:
        client = self._cache.get(service)
        if client is None:
            if self._session is None:
                self._session = boto3.session.Session(region_name=self.region)
            client = self._session.client(service, config=_CONFIG)
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
