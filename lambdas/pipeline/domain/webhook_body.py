"""How a delivery's raw bytes are stored in the webhook log.

A DynamoDB item holds at most 400 KB; Meta may send 3 MB. Bodies over a kilobyte are gzipped
(JSON shrinks several-fold, and every stored kilobyte is a write unit); a body that is still too
big for one item is split into parts: the log row holds part 0 and the part count, and parts 1..n-1
are their own items (`<log id>#part<n>`), written in the same transaction as the row. Nothing is
truncated or dropped: a delivery either fits completely or its write fails loudly (5xx, so Meta
retries), and the settings refuse a body cap for which that could happen (`MAX_LOGGABLE_BYTES`).
"""

from __future__ import annotations

import gzip
from collections.abc import Sequence
from dataclasses import dataclass

IDENTITY = "identity"
GZIP = "gzip"
ENCODINGS = (IDENTITY, GZIP)

COMPRESS_FROM_BYTES = 1024
"""Below this gzip's header and CPU cost more than the write units they save."""
COMPRESS_LEVEL = 6
"""zlib's default: level 9 is ~3x slower for ~3 % less; level 1 is ~20 % bigger on Meta JSON."""
PART_BYTES = 350_000
"""Leaves room under the 400 KB item limit for the row's other attributes."""
MAX_PARTS = 11
MAX_LOGGABLE_BYTES = 3_800_000
"""A transaction writes at most 4 MB in all: the largest body the log can always hold. The
webhook settings refuse a larger body cap."""


class BodyDoesNotFit(ValueError):
    """Only reachable with a body cap above MAX_LOGGABLE_BYTES, which the settings refuse."""


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
        # mtime=0 makes the bytes a function of the body alone, so a redelivery stores the same item.
        compressed = gzip.compress(raw, compresslevel=COMPRESS_LEVEL, mtime=0)
        if len(compressed) < len(raw):
            encoding, data = GZIP, compressed
    parts = tuple(data[i : i + PART_BYTES] for i in range(0, len(data), PART_BYTES)) or (b"",)
    if len(parts) > MAX_PARTS:
        raise BodyDoesNotFit(f"a {len(raw)}-byte body needs {len(parts)} parts; at most {MAX_PARTS} fit")
    return StoredBody(encoding=encoding, parts=parts, size=len(raw))


def unpack(encoding: str, parts: Sequence[bytes]) -> bytes:
    data = b"".join(parts)
    if encoding == IDENTITY:
        return data
    if encoding == GZIP:
        return gzip.decompress(data)
    raise ValueError(f"unknown body encoding {encoding!r}")
