"""The state table's lane counts (adapters/state_table.py): a lane's depth as last sighted."""

from __future__ import annotations

DEPTH = "depth"
SEEN_AT = "seen_at"
