"""The jobs API's callers, read from their secret once per instance, at its cold start.

They are the grants of JobsSettings.callers (settings/callers.py), kept in Secrets Manager rather
than the function's environment: one principal granted one tenant takes about 60 bytes, and Lambda
allows 4 KB for the whole environment. The function's JOBS_CALLERS_DIGEST changes with them, so a
deploy that changes them replaces the warm instances. A secret that cannot be read, or does not
hold a JSON object of lists of tenant ids, fails the cold start: Lambda counts it as an error
(the door's Errors alarm), and no request is answered with the wrong grants.
"""

from __future__ import annotations

import json
from typing import Any

from pipeline.settings.environ import SettingsError


def read_callers(client: Any, secret_arn: str) -> dict[str, tuple[str, ...]]:
    raw = client.get_secret_value(SecretId=secret_arn)["SecretString"]
    try:
        value = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise SettingsError(f"the jobs callers' secret is not JSON: {exc}") from exc
    if not isinstance(value, dict) or not all(
        isinstance(tenants, list) and all(isinstance(t, str) for t in tenants) for tenants in value.values()
    ):
        raise SettingsError("the jobs callers' secret must map each principal to a list of tenant ids")
    return {str(principal): tuple(tenants) for principal, tenants in value.items()}
