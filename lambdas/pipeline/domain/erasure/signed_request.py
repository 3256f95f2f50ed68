"""Meta's `signed_request`, as its data-deletion callback sends it.

The callback is a form POST with one field, `signed_request` = `<signature>.<payload>`, both
base64url without padding. The payload is JSON: `algorithm` ("HMAC-SHA256"), `user_id` (the
app-scoped id of the person asking to be forgotten), `issued_at`, and more. The signature is
HMAC-SHA256 of the payload *as encoded* (the text after the dot) under the app secret.

The form is checked before any secret is used, and the payload is read only once its signature
matched: a forger learns nothing from which of its fields were wrong. Every signing key in force is
tried, as for webhooks (domain/signature.py), so a rotation does not refuse Meta's callbacks.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum
from urllib.parse import parse_qs

from pipeline.domain import signature
from pipeline.domain.signature import SignatureCheck

FIELD = "signed_request"
CLOCK_SKEW_SECONDS = 60
"""How far ahead of this clock Meta's `issued_at` may be and still count as now."""
ALGORITHM = "HMAC-SHA256"
MAX_LENGTH = 8192
"""Meta's are a few hundred characters; anything much longer is not Meta."""
_BASE64URL = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_=")


class Refusal(StrEnum):
    MISSING = "signed_request_missing"
    MALFORMED = "signed_request_malformed"
    """Not `<signature>.<payload>` in base64url, or a signature that is not 32 bytes."""
    MISMATCH = "signed_request_mismatch"
    UNSUPPORTED = "signed_request_unsupported"
    """Signed correctly, but not with HMAC-SHA256, or naming no user."""
    STALE = "signed_request_stale"
    """Signed correctly, but issued too long ago (or in the future, or not saying when): a
    captured request replayed, which would otherwise make a new erasure every time."""

    @property
    def status(self) -> int:
        """401 for no usable signature, 403 for a wrong or stale one, as the webhook door answers;
        400 for a signed request that asks for something this callback does not do."""
        if self in (Refusal.MISMATCH, Refusal.STALE):
            return 403
        return 400 if self is Refusal.UNSUPPORTED else 401


class Refused(Exception):
    def __init__(self, refusal: Refusal) -> None:
        super().__init__(refusal.value.replace("_", " "))
        self.refusal = refusal


@dataclass(frozen=True)
class SignedRequest:
    user_id: str
    issued_at: float | None


def from_form(body: bytes) -> str:
    """The one `signed_request` field of a form body. Raises Refused(MISSING or MALFORMED)."""
    try:
        fields = parse_qs(body.decode("ascii"), keep_blank_values=True, strict_parsing=False, max_num_fields=20)
    except (UnicodeDecodeError, ValueError) as exc:
        raise Refused(Refusal.MALFORMED) from exc
    values = fields.get(FIELD) or []
    if not values or not values[0]:
        raise Refused(Refusal.MISSING)
    if len(values) > 1:
        raise Refused(Refusal.MALFORMED)
    return values[0]


def _decode(part: str) -> bytes:
    if not part or not _BASE64URL.issuperset(part):
        raise Refused(Refusal.MALFORMED)
    try:
        return base64.urlsafe_b64decode(part.rstrip("=") + "=" * (-len(part.rstrip("=")) % 4))
    except (binascii.Error, ValueError) as exc:
        raise Refused(Refusal.MALFORMED) from exc


def sign(payload: dict[str, object], secret: str | bytes) -> str:
    """A `signed_request` as Meta makes one (tests and local tools use it)."""
    key = secret.encode() if isinstance(secret, str) else secret
    encoded = base64.urlsafe_b64encode(json.dumps(payload, separators=(",", ":")).encode()).rstrip(b"=")
    signature = base64.urlsafe_b64encode(hmac.new(key, encoded, hashlib.sha256).digest()).rstrip(b"=")
    return f"{signature.decode()}.{encoded.decode()}"


def verify(signed: str, keys: Iterable[bytes]) -> SignedRequest:
    """The request Meta signed. Raises Refused: MALFORMED before any key is used, MISMATCH when
    no key in force signed it, UNSUPPORTED for a signed payload this callback cannot act on."""
    if len(signed) > MAX_LENGTH or signed.count(".") != 1:
        raise Refused(Refusal.MALFORMED)
    encoded_signature, encoded_payload = signed.split(".")
    claimed = _decode(encoded_signature)
    raw_payload = _decode(encoded_payload)
    if len(claimed) != hashlib.sha256().digest_size:
        raise Refused(Refusal.MALFORMED)
    # The same HMAC-SHA256 check as the webhook's signature, over the payload's encoded text.
    if signature.matches(encoded_payload.encode("ascii"), claimed, keys) is not SignatureCheck.VALID:
        raise Refused(Refusal.MISMATCH)
    try:
        payload = json.loads(raw_payload)
    except (UnicodeDecodeError, ValueError) as exc:
        raise Refused(Refusal.UNSUPPORTED) from exc
    if not isinstance(payload, dict) or str(payload.get("algorithm", "")).upper() != ALGORITHM:
        raise Refused(Refusal.UNSUPPORTED)
    user = payload.get("user_id")
    if isinstance(user, bool) or not isinstance(user, str | int) or str(user).strip() == "":
        raise Refused(Refusal.UNSUPPORTED)
    issued = payload.get("issued_at")
    issued_at = float(issued) if isinstance(issued, int | float) and not isinstance(issued, bool) else None
    return SignedRequest(user_id=str(user).strip(), issued_at=issued_at)


def check_fresh(request: SignedRequest, *, now: float, max_age_seconds: float) -> None:
    """Raises Refused(STALE) unless the request was issued within `max_age_seconds` of `now`.
    Meta calls the callback the moment a person asks, so an older one is a replay."""
    issued = request.issued_at
    if issued is None or issued < now - max_age_seconds or issued > now + CLOCK_SKEW_SECONDS:
        raise Refused(Refusal.STALE)
