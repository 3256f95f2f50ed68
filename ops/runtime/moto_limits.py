"""moto refuses what AWS refuses at AWS's limits (the figures, and how each is measured:
ops/runtime/aws_limits.py), with AWS's error codes and messages, and writes nothing it refuses.

What moto 5.2.5 did before, probed through boto3:
- Lambda: CreateFunction and UpdateFunctionConfiguration took a 5 KB environment, and so did
  moto's CloudFormation: a template Lambda would refuse deployed locally.
- SQS: a message was measured by its body's characters alone: 600 two-byte characters (1,200
  bytes) and a body at the limit with an attribute went into a 1,024-byte queue. A batch was
  measured by its bodies alone, so one of 1 MiB + 1 byte with its attribute was sent. A batch
  with one entry over the queue's MaximumMessageSize was refused whole, where SQS fails that
  entry and sends the rest. More than 10 entries moto refuses as SQS does.
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
    _sqs_message_sizes()
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


def _sqs_message_sizes() -> None:
    from moto.sqs.exceptions import BatchRequestTooLong, InvalidParameterValue
    from moto.sqs.models import SQSBackend

    send = SQSBackend.send_message
    send_batch = SQSBackend.send_message_batch

    def send_message(self: Any, queue_name: str, message_body: str, *args: Any, **kwargs: Any) -> Any:
        limit = int(self.get_queue(queue_name).maximum_message_size)
        attributes = kwargs.get("message_attributes", args[0] if args else None)
        if aws_limits.sqs_message_bytes(message_body, attributes) > limit:
            raise InvalidParameterValue(f"One or more parameters are invalid. Reason: {_too_long(limit)}")
        return send(self, queue_name, message_body, *args, **kwargs)

    def send_message_batch(self: Any, queue_name: str, entries: dict[str, dict[str, Any]]) -> Any:
        sizes = {
            key: aws_limits.sqs_message_bytes(e["MessageBody"], e.get("MessageAttributes"))
            for key, e in entries.items()
        }
        total = sum(sizes.values())
        if total > aws_limits.SQS_MESSAGE_BYTES:
            raise BatchRequestTooLong(total)
        limit = int(self.get_queue(queue_name).maximum_message_size)
        oversized = {key for key, size in sizes.items() if size > limit}
        ids = [entry["Id"] for entry in entries.values()]
        # A batch moto refuses whole (too many entries, a repeated id) is left for it to refuse.
        if not oversized or len(entries) > aws_limits.SQS_BATCH_ENTRIES or len(set(ids)) < len(ids):
            return send_batch(self, queue_name, entries)
        kept = {key: entry for key, entry in entries.items() if key not in oversized}
        sent, failed = send_batch(self, queue_name, kept) if kept else ([], [])
        failed += [
            {
                "Id": entries[key]["Id"],
                "SenderFault": True,
                "Code": "InvalidParameterValue",
                "Message": f"One or more parameters cannot be validated. Reason: {_too_long(limit)}",
            }
            for key in entries
            if key in oversized
        ]
        return sent, failed

    SQSBackend.send_message = functools.wraps(send)(send_message)  # type: ignore[method-assign]
    SQSBackend.send_message_batch = functools.wraps(send_batch)(send_message_batch)  # type: ignore[method-assign]


def _too_long(limit: int) -> str:
    return f"Message must be shorter than {limit} bytes."
