"""moto's tables forget a partition once its last item is gone.

moto keeps a table's items as {hash key: {range key: item}} in a defaultdict: deleting a
partition's last item leaves its empty dict behind, and reading a missing item of a table with a
sort key makes one. In a runtime that keeps data for a minute, a new customer in every message
(the soak's `new-customers` shape) left one empty partition per person for good: memory grew 7 %
in ten minutes at 50 a second although every item had expired.
"""

from __future__ import annotations

import functools
from typing import Any

_PATCHED = False


def install() -> None:
    global _PATCHED
    if _PATCHED:
        return
    from moto.dynamodb.models.table import Table

    original_delete, original_get = Table.delete_item, Table.get_item

    @functools.wraps(original_delete)
    def delete_item(self: Any, hash_key: Any, range_key: Any) -> Any:
        item = original_delete(self, hash_key, range_key)
        if range_key and not self.items.get(hash_key, True):
            del self.items[hash_key]
        return item

    @functools.wraps(original_get)
    def get_item(self: Any, hash_key: Any, range_key: Any = None, projection_expression: Any = None) -> Any:
        if range_key and hash_key not in self.items:
            return None  # moto's own lookup would leave an empty partition for this key
        return original_get(self, hash_key, range_key, projection_expression)

    Table.delete_item = delete_item  # type: ignore[method-assign]
    Table.get_item = get_item  # type: ignore[method-assign]
    _PATCHED = True
