"""Meta-shaped WhatsApp status deliveries about a reply, and a reply item waiting for them."""

from __future__ import annotations

from typing import Any

from pipeline.domain.dependencies import meta_send as ms
from pipeline.tasks import ai, replies

SHOP = "shop-1"
OTHER_SHOP = "shop-2"
WABA = "102290129340398"
PHONE_ID = "1098765"
OTHER_PHONE_ID = "2098765"
CUSTOMER = "15551230001"


def status_delivery(
    callback: str,
    *,
    phone_id: str = PHONE_ID,
    status: str = "sent",
    message_id: str = "wamid.HBgLMTU1NTEyMzAwMDEVAgARGBI",
    errors: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """One status as the Cloud API posts it: the sending number in the change's metadata."""
    entry: dict[str, Any] = {
        "id": message_id,
        "status": status,
        "timestamp": "1733270000",
        "recipient_id": CUSTOMER,
        "biz_opaque_callback_data": callback,
    }
    if errors is not None:
        entry["errors"] = errors
    return {
        "object": "whatsapp_business_account",
        "entry": [
            {
                "id": WABA,
                "changes": [
                    {
                        "field": "messages",
                        "value": {
                            "messaging_product": "whatsapp",
                            "metadata": {"display_phone_number": "15550001111", "phone_number_id": phone_id},
                            "statuses": [entry],
                        },
                    }
                ],
            }
        ],
    }


def failed_errors(code: int) -> list[dict[str, Any]]:
    return [{"code": code, "title": "Re-engagement message", "message": "Re-engagement message"}]


def put_reply(h, state: str, *, tenant: str = SHOP, conversation: str = "conv-1", token: str = "m1", **more) -> dict:
    key = replies.reply_key(ai.conversation_pk(tenant, conversation), token)
    h.dynamodb.Table("data").put_item(
        Item={**key, "text": "We open at 10.", "send_state": state, "send_attempts": 1, **more}
    )
    return key


def reply(h, key: dict) -> dict:
    return h.data(key["pk"], key["sk"])


def ref(tenant: str = SHOP, conversation: str = "conv-1", phone_id: str = PHONE_ID) -> ms.CallbackRef:
    return ms.CallbackRef(tenant, conversation, "m1", 1, phone_id)
