"""moto's CloudFormation fails a stack, as CloudFormation does, when a service refuses a resource.

moto creates a template's resources inside CreateStack and lets a service's refusal out of that
call: the CloudFormation client then gets another service's error, which it cannot parse ("invalid
XML received"). CloudFormation takes the stack, fails the resource and rolls back: the stack ends
ROLLBACK_COMPLETE and its events name the resource and carry the service's message. Here the stack
ends the same way, with a CREATE_FAILED event for the resource, so a deploy
(local_aws/deploy.py) says what was refused and why. The resources created before it are left
in place: the runtime exits on a failed deploy, with its backend.
"""

from __future__ import annotations

import functools
from typing import Any

_PATCHED = False


class _ResourceRefused(Exception):
    def __init__(self, logical_id: str, resource_type: str, message: str) -> None:
        super().__init__(message)
        self.logical_id = logical_id
        self.resource_type = resource_type
        self.message = message


def install() -> None:
    global _PATCHED
    if _PATCHED:
        return
    from moto.cloudformation import parsing
    from moto.cloudformation.models import Event, Stack
    from moto.core.exceptions import ServiceException
    from werkzeug.exceptions import HTTPException

    create_resource: Any = parsing.parse_and_create_resource
    create_resources = Stack.create_resources

    def parse_and_create_resource(logical_id: str, resource_json: dict[str, Any], *args: Any, **kwargs: Any) -> Any:
        try:
            return create_resource(logical_id, resource_json, *args, **kwargs)
        except (HTTPException, ServiceException) as error:
            message = str(getattr(error, "message", None) or error)
            raise _ResourceRefused(logical_id, str(resource_json.get("Type")), message) from error

    def create_stack_resources(self: Any) -> None:
        try:
            create_resources(self)
        except _ResourceRefused as refused:
            reason = f'Resource handler returned message: "{refused.message}"'
            self.events.append(
                Event(
                    self.stack_id,
                    self.name,
                    refused.logical_id,
                    "",
                    refused.resource_type,
                    "CREATE_FAILED",
                    reason,
                    None,
                )
            )
            self._add_stack_event(
                "ROLLBACK_COMPLETE", f"The following resource(s) failed to create: [{refused.logical_id}]."
            )
            self.status = "ROLLBACK_COMPLETE"

    parsing.parse_and_create_resource = functools.wraps(create_resource)(parse_and_create_resource)
    Stack.create_resources = functools.wraps(create_resources)(create_stack_resources)  # type: ignore[method-assign]
    _PATCHED = True
