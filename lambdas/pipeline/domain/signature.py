"""Meta's `X-Hub-Signature-256`: HMAC-SHA256 of the raw request bytes under the app secret.

Verified over the bytes exactly as received (never a re-serialized body: JSON re-encoding changes
escapes and spacing, so it would reject genuine deliveries or, worse, hide a tampered one), with
a constant-time compare, against every signing key in force: the current app secret and, until its
dated expiry, the previous one (see adapters/secrets.py), so that deliveries signed with the old
secret still verify while Meta switches over.
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


def claimed_digest(header: str | None) -> bytes | SignatureCheck:
    """The digest the header claims, or why it claims none (MISSING or MALFORMED). Reads only the
    header: the door calls it before it fetches a secret or hashes a body, so a request without
    a well-formed signature costs neither."""
    if header is None or header.strip() == "":
        return SignatureCheck.MISSING
    value = header.strip()
    if not value.startswith(PREFIX):
        return SignatureCheck.MALFORMED
    hex_part = value[len(PREFIX) :]
    # bytes.fromhex alone would accept embedded spaces; insist on exactly 64 hex digits.
    if len(hex_part) != HEX_LENGTH or not _HEX_DIGITS.issuperset(hex_part):
        return SignatureCheck.MALFORMED
    return bytes.fromhex(hex_part)


def matches(raw: bytes, claimed: bytes, secrets: Iterable[bytes]) -> SignatureCheck:
    """VALID when `claimed` is the HMAC of `raw` under a non-empty secret, else MISMATCH. Every
    secret is tried even after a match, so the time taken does not say which one matched."""
    matched = False
    for secret in secrets:
        if secret:
            expected = hmac.new(secret, raw, hashlib.sha256).digest()
            matched |= hmac.compare_digest(expected, claimed)
    return SignatureCheck.VALID if matched else SignatureCheck.MISMATCH


def verify(raw: bytes, header: str | None, secrets: Iterable[bytes]) -> SignatureCheck:
    """Both steps at once: the header's form, then the digest against each secret."""
    claimed = claimed_digest(header)
    if isinstance(claimed, SignatureCheck):
        return claimed
    return matches(raw, claimed, secrets)
