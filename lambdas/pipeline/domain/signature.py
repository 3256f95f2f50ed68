"""Meta's `X-Hub-Signature-256`: HMAC-SHA256 of the raw request bytes under the app secret.

Verified over the bytes exactly as received (never a re-serialized body: JSON re-encoding changes
escapes and spacing, so it would reject genuine deliveries or, worse, hide a tampered one), with
a constant-time compare, against every configured secret so that a secret can be rotated without
dropping deliveries signed with the old one while Meta switches over.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Iterable
from enum import StrEnum

HEADER = "x-hub-signature-256"
PREFIX = "sha256="
HEX_LENGTH = hashlib.sha256().digest_size * 2
_HEX_DIGITS = frozenset("0123456789abcdefABCDEF")


class SignatureCheck(StrEnum):
    VALID = "valid"
    MISSING = "signature_missing"
    MALFORMED = "signature_malformed"
    """Wrong prefix, wrong length or not hex: a client bug or a probe, not a bad secret."""
    MISMATCH = "signature_mismatch"


def sign(secret: str | bytes, raw: bytes) -> str:
    """The header value Meta would send for `raw` (tests, benchmarks and local tools use it)."""
    key = secret.encode() if isinstance(secret, str) else secret
    return PREFIX + hmac.new(key, raw, hashlib.sha256).hexdigest()


def _claimed_digest(header: str) -> bytes | None:
    value = header.strip()
    if not value.startswith(PREFIX):
        return None
    hex_part = value[len(PREFIX) :]
    # bytes.fromhex alone would accept embedded spaces; insist on exactly 64 hex digits.
    if len(hex_part) != HEX_LENGTH or not _HEX_DIGITS.issuperset(hex_part):
        return None
    return bytes.fromhex(hex_part)


def verify(raw: bytes, header: str | None, secrets: Iterable[bytes]) -> SignatureCheck:
    """Check `header` against each non-empty secret. Every secret is tried even after a match,
    so the time taken does not say which secret (or whether the first) matched."""
    if header is None or header.strip() == "":
        return SignatureCheck.MISSING
    claimed = _claimed_digest(header)
    if claimed is None:
        return SignatureCheck.MALFORMED
    matched = False
    for secret in secrets:
        if secret:
            expected = hmac.new(secret, raw, hashlib.sha256).digest()
            matched |= hmac.compare_digest(expected, claimed)
    return SignatureCheck.VALID if matched else SignatureCheck.MISMATCH
