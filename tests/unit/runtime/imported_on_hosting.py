"""A handler module for test_function_host: nothing else imports it."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any


def create_handler(environ: Mapping[str, str]) -> Callable[[Any, Any], dict[str, bool]]:
    def handler(event: Any, context: Any) -> dict[str, bool]:
        return {"hosted": True}

    return handler
