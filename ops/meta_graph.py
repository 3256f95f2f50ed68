"""Meta's Graph API as `lanectl meta check` asks it: which apps an account is subscribed to
(`GET /{page-id}/subscribed_apps`, `GET /{ig-user-id}/subscribed_apps`, `GET /{waba-id}/subscribed_apps`),
with the access token the pipeline sends replies with. One HTTPS request per account, from the
standard library, no retry: the command is run by a person, who can run it again.

Meta's error bodies (`{"error": {"message", "type", "code", "error_subcode", "fbtrace_id"}}`) are
read into `GraphRefused` with Meta's code (190: the token; 100: an id Meta does not have or will
not show this token); no connection, a 5xx or Meta's 2 (service temporarily unavailable) is
`GraphUnavailable`: the account could not be checked.
"""

from __future__ import annotations

import http.client
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from pipeline.adapters.graph_api import graph_base, graph_get

TIMEOUT_SECONDS = 10.0


class GraphUnavailable(Exception):
    """Meta could not be asked: no connection, no answer, or Meta said it is unavailable."""


@dataclass
class GraphRefused(Exception):
    status: int
    code: int
    message: str
    subcode: int | None = None

    def __str__(self) -> str:
        sub = f", subcode {self.subcode}" if self.subcode is not None else ""
        return f"Meta refused ({self.status}, code {self.code}{sub}): {self.message}"


class Graph:
    def __init__(self, base_url: str, token: str, *, timeout: float = TIMEOUT_SECONDS) -> None:
        self._split = graph_base(base_url)
        self._token = token
        self._timeout = timeout

    def subscribed_apps(self, account_id: str) -> list[dict[str, Any]]:
        """`data` of `GET /{account_id}/subscribed_apps`: the apps subscribed, in Meta's shape."""
        answer = self._get(f"/{quote(account_id, safe='')}/subscribed_apps")
        data = answer.get("data") if isinstance(answer, dict) else None
        if not isinstance(data, list):
            raise GraphUnavailable("Meta answered without a `data` list")
        return [entry for entry in data if isinstance(entry, dict)]

    def _get(self, path: str) -> Any:
        try:
            status, answer = graph_get(self._split, path, self._token, timeout=self._timeout)
        except (OSError, http.client.HTTPException) as exc:
            raise GraphUnavailable(f"{self._split.hostname} could not be reached: {type(exc).__name__}") from exc
        error = answer.get("error") if isinstance(answer, dict) else None
        if status < 300 and error is None:
            return answer
        if isinstance(error, dict) and isinstance(error.get("code"), int) and error["code"] != 2 and status < 500:
            subcode = error.get("error_subcode")
            raise GraphRefused(status, error["code"], str(error.get("message", "")), subcode)
        detail = error.get("message") if isinstance(error, dict) else f"HTTP {status}"
        raise GraphUnavailable(f"Meta answered {status}: {detail}")
