"""The lane probe's cheap real calls: does the dependency that stopped a lane answer again?

- Meta's access token: `GET /{version}/me?fields=id` with the token as bearer, the Graph API's
  cheapest call that needs a valid token (Meta answers 190 with its OAuthException body for a
  revoked or expired one). The token is read from its secret on every check (one GetSecretValue,
  through the senders' own reader with no cache), so a token stored a second ago is the one tried.
  No message is sent.
- The model: one Converse call with a one-word prompt and maxTokens 1 against the lane's model (a
  dozen input tokens and one output token), authorised as bedrock:InvokeModel on that model.

Each answers None when healthy, else the reason it failed (domain/dependencies/model.py,
domain/dependencies/meta_send.py).
"""

from __future__ import annotations

import http.client
import time
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from pipeline.adapters.bedrock import failure_of, runtime_client
from pipeline.adapters.graph_api import AccessToken, TokenUnavailable, graph_base, graph_get
from pipeline.domain.dependencies import model as model_errors
from pipeline.domain.dependencies.meta_send import NotSent, OutcomeUnknown, SendRefused, error_for
from pipeline.domain.errors import classify
from pipeline.settings import Credentials

CHECK_SECONDS = 5.0
PROBE_PROMPT = "ping"


class MetaTokenCheck:
    def __init__(self, base_url: str, secrets: Any, token_arn: str) -> None:
        self._base = graph_base(base_url)
        self._secrets = secrets
        self._arn = token_arn

    def check(self) -> str | None:
        try:
            token = AccessToken(self._secrets, self._arn, time.time, cache_seconds=0).get()
        except TokenUnavailable:
            return "meta_token_unavailable"
        try:
            status, answer = graph_get(self._base, "/me?fields=id", token, timeout=CHECK_SECONDS)
        except (OSError, http.client.HTTPException):
            return NotSent.reason
        if status < 300:
            return None
        error = error_for(status, answer if answer is not None else {})
        # A read sends nothing, so a 5xx here is only Meta failing: the reason a refused send has.
        return SendRefused.reason if isinstance(error, OutcomeUnknown) else classify(error).reason


def probe_converse_client(region: str, credentials: Credentials | None) -> Any:
    return runtime_client(region, credentials, read_timeout=CHECK_SECONDS * 2)


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
            return classify(failure_of(exc)).reason
        except BotoCoreError:
            return model_errors.ModelUnavailable.reason
        return None
