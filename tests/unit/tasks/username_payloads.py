"""WhatsApp deliveries of Meta's 2026 username rollout, shaped as Meta sends them.

The shapes follow Meta's "Business-scoped user IDs" page and the deliveries pywa tests its parsing
with (`tests/data/updates/callback_button.json`, `User.from_contact`): a contact carries `user_id`
(the business-scoped user id, BSUID), `parent_user_id` when parent BSUIDs are on, `profile.username`
when the customer has a username, and `wa_id` only while Meta still shares their number; a message
carries `from_user_id` (and `from_parent_user_id`) beside `from`, which is absent for a username-only
customer; a status carries `recipient_user_id` (and `recipient_parent_user_id`) beside
`recipient_id`, absent when the message was sent to the BSUID and the number is withheld.
"""

from __future__ import annotations

from typing import Any

from ops.drive.meta_payloads import whatsapp_delivery
from tests.unit.tasks.payloads import WABA

BSUID = "US.13491208655302741918"
PARENT_BSUID = "US.ENT.11815799212886844830"
USERNAME = "sheena.bakes"
NAME = "Sheena"
PHONE = "15550001"
PHONE_NUMBER_ID = "pn-1"


def _delivery(value: dict[str, Any], waba: str = WABA) -> dict[str, Any]:
    return whatsapp_delivery(waba, value, PHONE_NUMBER_ID)


def contact(*, bsuid: str = BSUID, phone: str | None = None, username: str | None = USERNAME) -> dict[str, Any]:
    profile: dict[str, str] = {"name": NAME}
    if username is not None:
        profile["username"] = username
    found: dict[str, Any] = {"profile": profile, "user_id": bsuid, "parent_user_id": PARENT_BSUID}
    if phone is not None:
        found["wa_id"] = phone
    return found


def text(wamid: str, body: str, *, bsuid: str = BSUID, phone: str | None = None, ts: int = 1_700_000_000) -> dict:
    message: dict[str, Any] = {
        "from_user_id": bsuid,
        "from_parent_user_id": PARENT_BSUID,
        "id": wamid,
        "timestamp": str(ts),
        "type": "text",
        "text": {"body": body},
    }
    if phone is not None:
        message["from"] = phone
    return message


def username_only(wamid: str, body: str = "hi, is the shop open on Sunday?", *, bsuid: str = BSUID) -> dict:
    """A customer who adopted a username: no phone number anywhere in the delivery."""
    return _delivery({"contacts": [contact(bsuid=bsuid)], "messages": [text(wamid, body, bsuid=bsuid)]})


def with_phone(wamid: str, body: str = "hello", *, bsuid: str = BSUID, phone: str = PHONE) -> dict:
    """A customer Meta still shares the number of: both ids, no username."""
    return _delivery(
        {
            "contacts": [contact(bsuid=bsuid, phone=phone, username=None)],
            "messages": [text(wamid, body, bsuid=bsuid, phone=phone)],
        }
    )


def status_to_bsuid(wamid: str, name: str, *, bsuid: str = BSUID, ts: int = 1_700_000_100) -> dict:
    """A status of a message sent to the BSUID: no `recipient_id`; delivered and read carry the contact."""
    status = {
        "id": wamid,
        "status": name,
        "timestamp": str(ts),
        "recipient_user_id": bsuid,
        "recipient_parent_user_id": PARENT_BSUID,
    }
    value: dict[str, Any] = {"statuses": [status]}
    if name in ("delivered", "read"):
        value["contacts"] = [contact(bsuid=bsuid)]
    return _delivery(value)
