"""A table's deletion protection through DynamoDB's UpdateTable (no capacity used)."""

from __future__ import annotations

from typing import Any


def set_protection(client: Any, table: str, *, enabled: bool) -> bool:
    """Sets the table's protection; whether it changed it (so a failure later can undo it)."""
    current = client.describe_table(TableName=table)["Table"].get("DeletionProtectionEnabled", False)
    if current == enabled:
        return False
    client.update_table(TableName=table, DeletionProtectionEnabled=enabled)
    return True
