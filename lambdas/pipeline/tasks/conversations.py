"""Where an ai conversation's items are, and what logs call it.

A conversation's messages and replies share one partition of the data table, and its turn marker
is one item in the state table. The ai lane's tasks (tasks/ai.py), the replies they send
(tasks/replies.py) and the erasure (tasks/erase.py) all find them by these keys.
"""

from __future__ import annotations

import hashlib

from pipeline import schema

CONVERSATION_PREFIX = "conversation#"
MARKER_PREFIX = "turn-marker#"


def marker_key(tenant: str, conversation: str) -> dict[str, str]:
    return {schema.PK: f"{MARKER_PREFIX}{tenant}#{conversation}"}


def conversation_pk(tenant: str, conversation: str) -> str:
    return f"{CONVERSATION_PREFIX}{tenant}#{conversation}"


def marker_of(data_pk: str) -> dict[str, str] | None:
    """The turn marker (state table) of the conversation a data item belongs to, or None: it holds
    the latest message's text, so erasing a conversation erases its marker too."""
    if not data_pk.startswith(CONVERSATION_PREFIX):
        return None
    return {schema.PK: MARKER_PREFIX + data_pk[len(CONVERSATION_PREFIX) :]}


def conversation_ref(tenant: str, conversation: str) -> str:
    """What logs call a conversation: 16 hex digits of a SHA-256 over tenant and id."""
    return hashlib.sha256(f"{tenant}\x00{conversation}".encode()).hexdigest()[:16]
