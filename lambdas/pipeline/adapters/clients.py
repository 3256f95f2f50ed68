"""boto3 clients for one handler instance.

Each handler instance gets its own session: sessions are not thread-safe, and the local runtime
runs several instances in one process. Each session carries the function's own credentials when
its variables give them, so instances of different functions in one process each act as their
own role. Each function's calls are sized to its own time budget (`CallBudget`): the HTTP doors
(the webhook, the jobs API, the erasure callback) make at most `DOOR_SEQUENTIAL_CALLS` calls one
after another in a request, and each is bounded so that all of them end well inside the door's
10 s timeout, so a slow AWS gets a fast 500 (which Meta and producers retry) rather than a timeout,
which answers nothing and emits none of the door's own failure counts. The others (consumers,
sweeper, lane probe) have minutes and their own deadline watch, and keep standard retries.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import boto3
from botocore.config import Config

from pipeline.settings import Credentials


@dataclass(frozen=True)
class CallBudget:
    """How long one AWS call may take, retries included."""

    attempts: int
    """Every attempt, the first included (botocore's total_max_attempts)."""
    connect_seconds: float
    read_seconds: float

    @property
    def worst_case_seconds(self) -> float:
        """Each attempt's connect and read timeouts, and standard mode's longest backoff before
        each retry (up to 2^(n-1) s before the n-th, at most 20 s)."""
        backoff = sum(min(20.0, 2.0 ** (retry - 1)) for retry in range(1, self.attempts))
        return self.attempts * (self.connect_seconds + self.read_seconds) + backoff

    def config(self) -> Config:
        return Config(
            retries={"mode": "standard", "total_max_attempts": self.attempts},
            connect_timeout=self.connect_seconds,
            read_timeout=self.read_seconds,
            tcp_keepalive=True,
        )


DOOR = CallBudget(attempts=1, connect_seconds=0.4, read_seconds=0.7)
"""The HTTP doors': one attempt, since Meta redelivers a delivery answered 5xx and producers retry
a 5xx; DynamoDB, SQS and Secrets Manager answer in milliseconds, so 0.7 s is a slow AWS."""
DOOR_SEQUENTIAL_CALLS = 7
"""The most calls one webhook request makes one after another: the Meta secret, its re-read on a
mismatch, the sender key, the row, the account's last-seen note, the send and marking it unsent
(domain/webhook/door.py). The jobs API and the erasure callback make fewer."""
WORKER = CallBudget(attempts=4, connect_seconds=2, read_seconds=5)
"""Consumers', the sweeper's and the lane probe's: standard retries, within deadlines of their own."""


@dataclass
class Clients:
    region: str
    credentials: Credentials | None = field(default=None, repr=False)
    budget: CallBudget = WORKER
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
                config=self.budget.config(),
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
