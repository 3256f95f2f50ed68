"""The model behind the `ai` and `engagement` lanes: Amazon Bedrock's Converse API.

One Converse call per prompt, with the lane's system prompt, token limit and temperature
(pipeline/settings/model.py). The SDK retries nothing here: a throttled or failed call goes back
to the lane as a transient error, whose backoff (the lane's retry policy, on the message's
visibility) is the retry, so a busy model is not hit again within the same second by every
consumer at once. Errors are classed in domain/dependencies/model.py.
"""

from __future__ import annotations

from typing import Any

import boto3
from botocore.config import Config
from botocore.exceptions import ClientError, ConnectionError, ReadTimeoutError

from pipeline.domain.dependencies.model import Completion, ModelTimeout, ModelUnavailable, error_for
from pipeline.domain.errors import PermanentError
from pipeline.settings import Credentials, ModelSettings

LEAST_CALL_SECONDS = 0.5
"""A call given less time than this is not started: no model answers that fast, and a call cut
short has still cost its input tokens."""


def converse_client(region: str, credentials: Credentials | None, settings: ModelSettings) -> Any:
    return runtime_client(region, credentials, read_timeout=settings.call_timeout_seconds)


def runtime_client(region: str, credentials: Credentials | None, *, read_timeout: float) -> Any:
    """A bedrock-runtime client of its own session (sessions are not thread-safe; see clients.py),
    retrying nothing: the record's backoff, or the probe's next run, is the retry."""
    session = boto3.session.Session(region_name=region)
    return session.client(
        "bedrock-runtime",
        config=Config(
            retries={"mode": "standard", "total_max_attempts": 1},
            connect_timeout=2,
            read_timeout=read_timeout,
            tcp_keepalive=True,
        ),
        aws_access_key_id=credentials.access_key_id if credentials else None,
        aws_secret_access_key=credentials.secret_access_key if credentials else None,
        aws_session_token=credentials.session_token if credentials else None,
    )


def failure_of(exc: ClientError) -> Exception:
    """Bedrock's refusal as the model rules class it (domain/dependencies/model.py)."""
    error = exc.response.get("Error", {})
    status = int(exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode") or 0)
    return error_for(str(error.get("Code") or "Unknown"), status, str(error.get("Message") or ""))


class ConverseModel:
    def __init__(self, client: Any, settings: ModelSettings) -> None:
        self._client = client
        self._settings = settings

    def complete(self, prompt: str, *, timeout: float) -> Completion:
        if timeout < LEAST_CALL_SECONDS:
            raise ModelTimeout(f"{timeout:.2f} s left: too little for a model call")
        settings = self._settings
        try:
            response = self._client.converse(
                modelId=settings.model_id,
                system=[{"text": settings.system_prompt}],
                messages=[{"role": "user", "content": [{"text": prompt}]}],
                inferenceConfig={"maxTokens": settings.max_tokens, "temperature": settings.temperature},
            )
        except ClientError as exc:
            raise failure_of(exc) from exc
        except ReadTimeoutError as exc:
            raise ModelTimeout(f"no answer within {settings.call_timeout_seconds:g} s") from exc
        except ConnectionError as exc:
            raise ModelUnavailable(f"could not reach Bedrock: {type(exc).__name__}") from exc
        usage = response.get("usage") or {}
        content = ((response.get("output") or {}).get("message") or {}).get("content") or []
        text = "".join(str(block.get("text", "")) for block in content if isinstance(block, dict))
        return Completion(
            text=text,
            input_tokens=int(usage.get("inputTokens") or 0),
            output_tokens=int(usage.get("outputTokens") or 0),
        )


class NoModel:
    """What a lane deployed without a model has: its task must not call one."""

    def __init__(self, lane: str) -> None:
        self._lane = lane

    def complete(self, prompt: str, *, timeout: float) -> Completion:
        raise PermanentError("no_model", f"lane {self._lane} is deployed without a model")
