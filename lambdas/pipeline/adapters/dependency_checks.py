"""The lane probe's cheap real calls: does the dependency that stopped a lane answer again?

- Meta's access token: `GET /{version}/me?fields=id` with the token as bearer, the Graph API's
  cheapest call that needs a valid token (Meta answers 190 with its OAuthException body for a
  revoked or expired one). The token is read from its secret on every check (one GetSecretValue),
  so a token stored a second ago is the one tried. No message is sent.
- The model: one Converse call with a one-word prompt and maxTokens 1 against the lane's model (a
  dozen input tokens and one output token), authorised as bedrock:InvokeModel on that model.

Each answers None when healthy, else the reason it failed (domain/dependencies/model.py,
domain/dependencies/meta_send.py).
"""

from __future__ import annotations

import http.client
import json
from typing import Any
from urllib.parse import urlsplit

import boto3
from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError

from pipeline.domain.dependencies import model as model_errors
from pipeline.domain.dependencies.meta_send import error_for
from pipeline.domain.errors import classify
from pipeline.settings import Credentials

CHECK_SECONDS = 5.0
PROBE_PROMPT = "ping"


class MetaTokenCheck:
    def __init__(self, base_url: str, secrets: Any, token_arn: str) -> None:
        split = urlsplit(base_url.rstrip("/"))
        if split.scheme not in ("https", "http") or not split.hostname:
            raise ValueError(f"not a Graph API URL: {base_url!r}")
        self._split = split
        self._secrets = secrets
        self._arn = token_arn

    def check(self) -> str | None:
        try:
            raw = self._secrets.get_secret_value(SecretId=self._arn)["SecretString"]
            token = str(json.loads(raw).get("access_token") or "")
        except (ClientError, BotoCoreError, ValueError, AttributeError):
            return "meta_token_unavailable"
        if not token:
            return "meta_token_unavailable"
        split = self._split
        connection_class = http.client.HTTPSConnection if split.scheme == "https" else http.client.HTTPConnection
        connection = connection_class(split.hostname or "", split.port, timeout=CHECK_SECONDS)
        try:
            connection.request("GET", f"{split.path}/me?fields=id", headers={"Authorization": f"Bearer {token}"})
            response = connection.getresponse()
            status, data = response.status, response.read()
        except (OSError, http.client.HTTPException):
            return "meta_unreachable"
        finally:
            connection.close()
        if status < 300:
            return None
        try:
            answer = json.loads(data or b"{}")
        except ValueError:
            answer = {}
        return classify(error_for(status, answer)).reason


def probe_converse_client(region: str, credentials: Credentials | None) -> Any:
    """A bedrock-runtime client of its own session, retrying nothing: the next run is the retry."""
    session = boto3.session.Session(region_name=region)
    return session.client(
        "bedrock-runtime",
        config=Config(retries={"mode": "standard", "total_max_attempts": 1}, connect_timeout=2, read_timeout=10),
        aws_access_key_id=credentials.access_key_id if credentials else None,
        aws_secret_access_key=credentials.secret_access_key if credentials else None,
        aws_session_token=credentials.session_token if credentials else None,
    )


class ModelCheck:
    def __init__(self, client: Any, model_id: str) -> None:
        self._client = client
        self._model_id = model_id

    def check(self) -> str | None:
        try:
            self._client.converse(
                modelId=self._model_id,
                messages=[{"role": "user", "content": [{"text": PROBE_PROMPT}]}],
                inferenceConfig={"maxTokens": 1},
            )
        except ClientError as exc:
            error = exc.response.get("Error", {})
            status = int(exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode") or 0)
            code, message = str(error.get("Code") or "Unknown"), str(error.get("Message") or "")
            failure = model_errors.error_for(code, status, message)
            return classify(failure).reason
        except BotoCoreError:
            return model_errors.ModelUnavailable.reason
        return None
