"""Which AWS the CLI talks to, and its clients.

`--env local` targets the local runtime's emulator (`lanectl local` serves it on 127.0.0.1:5599)
unless an endpoint is given; any other environment talks to AWS with the caller's credentials.
`--endpoint-url` (or LANES_ENDPOINT_URL) points any environment at another endpoint.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import boto3
from botocore.config import Config
from botocore.exceptions import ClientError, ProfileNotFound

from ops.errors import AWS, USAGE, OpsError
from stacks.config.environments import Environment

ENDPOINT_VARIABLE = "LANES_ENDPOINT_URL"
LOCAL_ENDPOINT = "http://127.0.0.1:5599"
LOCAL_REGION = "us-east-1"
"""The region the local runtime deploys into."""
LOCAL_CREDENTIALS = {"aws_access_key_id": "local", "aws_secret_access_key": "local"}
"""An emulator accepts any credentials; these are used only when the caller has none."""

_CONFIG = Config(retries={"mode": "standard", "max_attempts": 3}, connect_timeout=3, read_timeout=20)


@dataclass(frozen=True)
class Target:
    env: Environment
    region: str
    endpoint_url: str | None = None
    profile: str | None = None

    @property
    def where(self) -> str:
        return self.endpoint_url or self.region


def target(
    env: Environment,
    *,
    endpoint_url: str | None,
    region: str | None,
    profile: str | None,
    environ: Mapping[str, str],
) -> Target:
    endpoint = endpoint_url or environ.get(ENDPOINT_VARIABLE) or (LOCAL_ENDPOINT if env.name == "local" else None)
    chosen = region or env.region or environ.get("AWS_REGION") or environ.get("AWS_DEFAULT_REGION")
    if not chosen and env.name == "local":
        chosen = LOCAL_REGION
    if not chosen:
        raise OpsError(
            f"no AWS region for {env.name}: pass --region, set AWS_REGION, or set region in "
            "stacks/config/environments.py",
            USAGE,
        )
    return Target(env=env, region=chosen, endpoint_url=endpoint or None, profile=profile)


@dataclass
class Aws:
    """Clients for one target, made on first use."""

    target: Target
    _session: Any = field(default=None, repr=False)
    _clients: dict[str, Any] = field(default_factory=dict, repr=False)

    def session(self) -> Any:
        if self._session is None:
            try:
                session = boto3.session.Session(profile_name=self.target.profile, region_name=self.target.region)
            except ProfileNotFound as exc:
                raise OpsError(f"{exc} (check --profile / AWS_PROFILE)", AWS) from exc
            if self.target.endpoint_url and session.get_credentials() is None:
                # An emulator needs some credentials to sign with, never real ones.
                session = boto3.session.Session(region_name=self.target.region, **LOCAL_CREDENTIALS)
            self._session = session
        return self._session

    def client(self, service: str) -> Any:
        if service not in self._clients:
            self._clients[service] = self.session().client(
                service, endpoint_url=self.target.endpoint_url, config=_CONFIG
            )
        return self._clients[service]


def describe_error(exc: Exception, limit: int = 160) -> str:
    """One line for a person. A backend that does not implement an API (the emulator) answers with
    an HTML page and no AWS error code; that is said plainly instead of printing the page."""
    if isinstance(exc, ClientError):
        error = exc.response.get("Error", {})
        code = str(error.get("Code", "?"))
        if code.isdigit():
            return f"HTTP {code} with no AWS error: this backend does not implement {exc.operation_name}"
        text = f"{code}: {error.get('Message', '')}".strip().rstrip(":")
    else:
        text = str(exc)
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."
