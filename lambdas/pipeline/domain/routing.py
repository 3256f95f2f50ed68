"""Lane and tenant for a Meta delivery, chosen at the door from what the work is.

Comment and feed changes go to the engagement lane, so a campaign that draws thousands of comments
never queues in front of a customer's message. Anything unrecognised goes to the messages lane:
wrong for volume, right for correctness (it is always consumed, and promptly).
"""

from __future__ import annotations

from typing import Any

MESSAGES_LANE = "messages"
ENGAGEMENT_LANE = "engagement"

WEBHOOK_LANES = frozenset({MESSAGES_LANE, ENGAGEMENT_LANE})
"""Every lane `lane_for` can return; a test proves each has a queue and a consumer."""

COMMENT_FIELDS = frozenset({"feed", "comments", "live_comments", "mentions"})
UNKNOWN_TENANT = "unknown"


def _changes(payload: Any) -> list[dict[str, Any]]:
    changes: list[dict[str, Any]] = []
    if not isinstance(payload, dict):
        return changes
    entries = payload.get("entry")
    if not isinstance(entries, list):
        return changes
    for entry in entries:
        if isinstance(entry, dict) and isinstance(entry.get("changes"), list):
            changes.extend(c for c in entry["changes"] if isinstance(c, dict))
    return changes


def lane_for(payload: Any) -> str:
    for change in _changes(payload):
        if change.get("field") in COMMENT_FIELDS:
            return ENGAGEMENT_LANE
    return MESSAGES_LANE


def tenant_for(payload: Any) -> str:
    """The business the delivery belongs to: the WhatsApp Business Account or page id of its first
    entry (Meta batches entries per object; a batch spanning businesses is rare and is processed
    under the first one's quota)."""
    if isinstance(payload, dict):
        entries = payload.get("entry")
        if isinstance(entries, list):
            for entry in entries:
                if isinstance(entry, dict) and entry.get("id") not in (None, ""):
                    return str(entry["id"])
    return UNKNOWN_TENANT
