"""The key sender hashes are made with (domain/senders.py), from Secrets Manager.

The stack generates it once (a `sender_hash_key` in the `SenderKey` secret) and nothing rotates it:
a new key would make every hash already written unfindable, so erasures would silently miss the
items written before. It is read once per instance, on the first hash that instance needs, and
kept for the instance's life. A failed read is not kept: the next hash tries again.
"""

from __future__ import annotations

import json
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from pipeline.domain import senders
from pipeline.domain.senders import SenderKeyUnavailable

KEY_FIELD = "sender_hash_key"
MIN_KEY_CHARACTERS = 32


class SenderKey:
    def __init__(self, client: Any, secret_arn: str) -> None:
        self._client = client
        self._arn = secret_arn
        self._key: bytes | None = None

    def key(self) -> bytes:
        if self._key is None:
            self._key = self._read()
        return self._key

    def hash(self, sender: str) -> str:
        """`sender`'s index key. Raises SenderKeyUnavailable, or ValueError for an empty id."""
        return senders.sender_hash(self.key(), sender)

    def _read(self) -> bytes:
        try:
            raw = self._client.get_secret_value(SecretId=self._arn)["SecretString"]
        except (ClientError, BotoCoreError) as exc:
            raise SenderKeyUnavailable(f"the sender key could not be read: {exc}") from exc
        try:
            value = json.loads(raw)[KEY_FIELD]
        except (ValueError, KeyError, TypeError) as exc:
            raise SenderKeyUnavailable(f"the sender key secret has no {KEY_FIELD}") from exc
        if not isinstance(value, str) or len(value) < MIN_KEY_CHARACTERS:
            raise SenderKeyUnavailable(f"the sender key must be at least {MIN_KEY_CHARACTERS} characters")
        return value.encode("utf-8")
