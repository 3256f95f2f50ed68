"""moto refuses what AWS refuses at AWS's limits (the figures, and how each is measured:
ops/runtime/aws_limits.py), with AWS's error codes and messages, and writes nothing it refuses.

What moto 5.2.5 did before, probed through boto3:
- Lambda: CreateFunction and UpdateFunctionConfiguration took a 5 KB environment, and so did
  moto's CloudFormation: a template Lambda would refuse deployed locally.
"""

from __future__ import annotations

import functools
from typing import Any

from ops.runtime import aws_limits

_PATCHED = False


def install() -> None:
    global _PATCHED
    if _PATCHED:
        return
    _lambda_environments()
    _PATCHED = True


def _lambda_environments() -> None:
    from moto.awslambda.models import LambdaBackend, LambdaFunction

    create = LambdaBackend.create_function
    update = LambdaFunction.update_configuration

    # moto's CloudFormation creates functions through the backend and updates them through the
    # function, so a template is held to the limit as the API is.
    def create_function(self: Any, spec: dict[str, Any]) -> Any:
        _check_environment(spec.get("Environment"))
        return create(self, spec)

    def update_configuration(self: Any, config_updates: dict[str, Any]) -> Any:
        _check_environment(config_updates.get("Environment"))
        return update(self, config_updates)

    LambdaBackend.create_function = functools.wraps(create)(create_function)  # type: ignore[method-assign]
    LambdaFunction.update_configuration = functools.wraps(update)(update_configuration)  # type: ignore[method-assign]


def _check_environment(environment: dict[str, Any] | None) -> None:
    from moto.awslambda.exceptions import InvalidParameterValueException

    variables = (environment or {}).get("Variables") or {}
    measured = aws_limits.lambda_environment(variables)
    if len(measured.encode("utf-8")) > aws_limits.LAMBDA_ENVIRONMENT_BYTES:
        raise InvalidParameterValueException(
            "Lambda was unable to configure your environment variables because the environment variables you "
            f"have provided exceeded the 4KB limit. String measured: {measured}"
        )
