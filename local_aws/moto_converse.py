"""Converse for moto's `bedrock-runtime` backend, answered by the local runtime's model
(converse_fake.py). moto parses the request with the service's own model and serialises the
answer or the error (`x-amzn-ErrorType`, the status Bedrock's API model gives each error), so the
SDK parses it as it parses Bedrock's.

The model's behaviour can be read and changed from another process through the emulator's port,
beside moto's own settings endpoints: GET or POST (a JSON object of ModelBehaviour's fields)
`/moto-api/local/model`."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

from local_aws.converse_fake import FAKE, ConverseError

_PATCHED = False


def install() -> None:
    global _PATCHED
    if _PATCHED:
        return
    from moto.bedrockruntime.responses import BedrockRuntimeResponse
    from moto.core.exceptions import ServiceException
    from moto.core.responses import ActionResult

    errors: dict[str, type[ServiceException]] = {}

    def error_class(code: str) -> type[ServiceException]:
        if code not in errors:
            errors[code] = type(code, (ServiceException,), {"code": code})
        return errors[code]

    def converse(self: Any) -> Any:
        try:
            answer = FAKE.converse(
                self._get_param("modelId") or "",
                self._get_param("system") or [],
                self._get_param("messages") or [],
                self._get_param("inferenceConfig") or {},
            )
        except ConverseError as error:
            raise error_class(error.code)(str(error)) from None
        return ActionResult(answer)

    BedrockRuntimeResponse.converse = converse  # type: ignore[attr-defined]
    _serve_settings()
    _PATCHED = True


def _serve_settings() -> None:
    from moto.moto_api._internal import urls

    def model_settings(request: Any, full_url: str, headers: Any) -> tuple[int, dict[str, str], str]:
        if request.method == "POST":
            try:
                changes = json.loads(request.data or b"{}")
                if not isinstance(changes, dict):
                    raise ValueError("a JSON object of the model's settings")
                FAKE.configure(**changes)
            except (ValueError, TypeError) as exc:
                return 400, {"content-type": "application/json"}, json.dumps({"error": str(exc)})
        return 200, {"content-type": "application/json"}, json.dumps(dataclasses.asdict(FAKE.behaviour))

    urls.url_paths["{0}/moto-api/local/model"] = model_settings
