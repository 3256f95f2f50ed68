"""How a delivery's raw bytes are stored in the webhook log.

A DynamoDB item holds at most 400 KB; Meta may send 3 MB. Bodies over half a kilobyte are
deflated against a preset dictionary of Meta's own JSON (every stored kilobyte is a write unit, and
a small delivery is mostly Meta's field names, which plain gzip has to spell out once per body:
a 2 KB WhatsApp text takes 0.96 KB gzipped and about 0.76 KB this way, so its row fits one write
unit with its other attributes: see adapters/webhook_log.py for the bytes those take). The
dictionary is versioned in the encoding's name and never edited: rows written with it must stay
readable. A body that is still too big for one item is split into parts: the log row holds part 0
and the part count, and parts 1..n-1 are their own items (`<log id>#part<n>`), written in the
same transaction as the row. Nothing is truncated or dropped: a delivery either fits completely or
its write fails loudly (5xx, so Meta retries), and the settings refuse a body cap for which that
could happen (`MAX_LOGGABLE_BYTES`).
"""

from __future__ import annotations

import gzip
import zlib
from collections.abc import Sequence
from dataclasses import dataclass

IDENTITY = "identity"
GZIP = "gzip"
"""Read only: rows written before the dictionary."""
META_DEFLATE = "deflate-meta1"
ENCODINGS = (IDENTITY, GZIP, META_DEFLATE)
UNNAMED_ENCODING = META_DEFLATE
"""What a row that names no encoding holds: the door names it only when it is another."""

COMPRESS_FROM_BYTES = 512
"""Below this the saving is under a write unit's worth, whatever the ratio."""
COMPRESS_LEVEL = 6
"""zlib's default: level 9 is ~3x slower for ~3 % less; level 1 is ~20 % bigger on Meta JSON."""
META_DICTIONARY = (
    b'{"object":"whatsapp_business_account","entry":[{"id":"","changes":[{"value":{"messaging_product":'
    b'"whatsapp","metadata":{"display_phone_number":"","phone_number_id":""},"contacts":[{"profile":'
    b'{"name":""},"wa_id":""}],"messages":[{"from":"","id":"wamid.","timestamp":"","text":{"body":""},'
    b'"type":"text"}],"statuses":[{"id":"wamid.","status":"delivered","timestamp":"","recipient_id":"",'
    b'"conversation":{"id":"","origin":{"type":"service"}},"pricing":{"billable":true,"pricing_model":'
    b'"CBP","category":"service"}}]},"field":"messages"}]}]}'
    b'{"object":"page","entry":[{"id":"","time":,"changes":[{"field":"feed","value":{"from":{"id":"",'
    b'"name":""},"post_id":"","comment_id":"","created_time":,"item":"comment","parent_id":"","verb":'
    b'"add","message":""}}],"messaging":[{"sender":{"id":""},"recipient":{"id":""},"timestamp":,'
    b'"message":{"mid":"","text":""}}]}]}'
    b'{"object":"instagram","entry":[{"id":"","time":,"changes":[{"field":"comments","value":{"from":'
    b'{"id":"","username":""},"media":{"id":"","media_product_type":"FEED"},"id":"","text":""}}]}]}'
    b'{"object": "whatsapp_business_account", "entry": [{"id": "", "changes": [{"field": "messages", '
    b'"value": {"messaging_product": "whatsapp", "metadata": {"display_phone_number": "", '
    b'"phone_number_id": ""}, "contacts": [{"wa_id": "", "profile": {"name": ""}}], "messages": [{"id": '
    b'"wamid.", "from": "", "timestamp": "", "type": "text", "text": {"body": ""}}]}}]}]}'
)
"""Meta's field names and fixed values, compact and as Python's json.dumps spaces them. Frozen:
`deflate-meta1` rows are only readable with exactly these bytes."""
PART_BYTES = 350_000
"""Leaves room under the 400 KB item limit for the row's other attributes."""
MAX_PARTS = 11


class BodyDoesNotFit(ValueError):
    """Only reachable with a body cap above MAX_LOGGABLE_BYTES, which WebhookSettings refuses."""


@dataclass(frozen=True)
class StoredBody:
    encoding: str
    parts: tuple[bytes, ...]
    size: int
    """Length of the raw body before encoding."""

    @property
    def stored_bytes(self) -> int:
        return sum(len(part) for part in self.parts)


def part_id(log_id: str, index: int) -> str:
    return f"{log_id}#part{index}"


def pack(raw: bytes) -> StoredBody:
    encoding, data = IDENTITY, raw
    if len(raw) >= COMPRESS_FROM_BYTES:
        # A function of the body alone, so a redelivery stores the same item.
        compressed = _deflate(raw)
        if len(compressed) < len(raw):
            encoding, data = META_DEFLATE, compressed
    parts = tuple(data[i : i + PART_BYTES] for i in range(0, len(data), PART_BYTES)) or (b"",)
    if len(parts) > MAX_PARTS:
        raise BodyDoesNotFit(f"a {len(raw)}-byte body needs {len(parts)} parts; at most {MAX_PARTS} fit")
    return StoredBody(encoding=encoding, parts=parts, size=len(raw))


def unpack(encoding: str | None, parts: Sequence[bytes]) -> bytes:
    """The raw bytes back; `encoding` None for a row that names none."""
    encoding = UNNAMED_ENCODING if encoding is None else encoding
    data = b"".join(parts)
    if encoding == IDENTITY:
        return data
    if encoding == META_DEFLATE:
        inflater = zlib.decompressobj(-zlib.MAX_WBITS, zdict=META_DICTIONARY)
        return inflater.decompress(data) + inflater.flush()
    if encoding == GZIP:
        return gzip.decompress(data)
    raise ValueError(f"unknown body encoding {encoding!r}")


def _deflate(raw: bytes) -> bytes:
    deflater = zlib.compressobj(COMPRESS_LEVEL, zlib.DEFLATED, -zlib.MAX_WBITS, zdict=META_DICTIONARY)
    return deflater.compress(raw) + deflater.flush()
