"""What a person wrote, as the data table keeps it: a String, or raw-deflated bytes where that pays.

A stored message is mostly its text, and the data table keeps it for the effects' retention (a
quarter in production): every kilobyte is a write unit once and storage for every day after. A
customer's 1.5 KB of prose deflates to about half, so a 2 KB WhatsApp text's item fits one write
unit instead of two and takes half the storage. Short texts are left alone: below
`COMPRESS_FROM_BYTES` deflate's own framing eats most of the saving, and a String stays readable
in the console and by a filter expression.

The attribute's DynamoDB type says which it is (String or Binary), so nothing else is stored to
tell them apart, and items written before compression read back unchanged. Read every stored text
through `read`.

JSON can spell half of a UTF-16 surrogate pair (`"\\ud83d"`, a client that cut an emoji in two),
and Python decodes it to a string UTF-8 cannot encode. Such a text is stored with U+FFFD in place
of each unpaired half (`well_formed`), as a UTF-8 decoder would show it, rather than failing the
delivery that carried it.
"""

from __future__ import annotations

import zlib

COMPRESS_FROM_BYTES = 256
KEEP_RATIO = 0.8
"""Compressed only when that saves a fifth or more: a text that barely shrinks (already random,
or mostly emoji) is kept as a String."""
_LEVEL = 6
_RAW_DEFLATE = -15


class UnreadableText(ValueError):
    """Stored bytes that are not raw deflate of UTF-8 text."""


def is_well_formed(text: str) -> bool:
    """Whether UTF-8 can carry `text`: it holds no unpaired surrogate."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def well_formed(text: str) -> str:
    """`text` with each unpaired surrogate replaced by U+FFFD; a pair spelled as two halves is
    joined into the character it stands for."""
    if is_well_formed(text):
        return text
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")


def stored(text: str) -> str | bytes:
    """`text` as it should be written: itself (well formed), or its raw deflate when that is worth it."""
    text = well_formed(text)
    raw = text.encode("utf-8")
    if len(raw) < COMPRESS_FROM_BYTES:
        return text
    packer = zlib.compressobj(_LEVEL, zlib.DEFLATED, _RAW_DEFLATE)
    packed = packer.compress(raw) + packer.flush()
    return packed if len(packed) <= KEEP_RATIO * len(raw) else text


def read(value: object) -> str:
    """The text of a stored `text` attribute, whichever way it was written."""
    if isinstance(value, str):
        return value
    if isinstance(value, bytes | bytearray | memoryview):
        try:
            return zlib.decompress(bytes(value), _RAW_DEFLATE).decode("utf-8")
        except (zlib.error, UnicodeDecodeError) as exc:
            raise UnreadableText(f"stored text is not deflated UTF-8: {exc}") from exc
    raise UnreadableText(f"stored text must be a string or bytes, got {type(value).__name__}")
