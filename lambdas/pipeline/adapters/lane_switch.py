"""A consumer pausing its own lane: its event source mapping disabled through Lambda's API.

The mapping's id cannot be in the function's own variables (the mapping is made from the function,
so the template would loop); the consumer finds it by its own function name, once per instance.
Its role may update that one mapping only (stacks/constructs/lane.py).
"""

from __future__ import annotations

from typing import Any


class MappingNotFound(RuntimeError):
    pass


class MappingSwitch:
    def __init__(self, client: Any, function_name: str) -> None:
        self._client = client
        self._function = function_name
        self._uuid: str | None = None

    def pause(self) -> None:
        self._client.update_event_source_mapping(UUID=self._mapping(), Enabled=False)

    def _mapping(self) -> str:
        if self._uuid is None:
            found = self._client.list_event_source_mappings(FunctionName=self._function)
            mappings = found.get("EventSourceMappings") or []
            if not mappings:
                raise MappingNotFound(f"no event source mapping invokes {self._function}")
            self._uuid = str(mappings[0]["UUID"])
        return self._uuid
