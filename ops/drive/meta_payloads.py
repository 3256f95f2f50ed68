"""Deliveries shaped as Meta sends them, for the demo, the end-to-end tests and the scenarios."""

from __future__ import annotations

import time
from typing import Any

CUSTOMER = "447700900123"
"""Who sends the messages and receives the statuses, unless told otherwise."""


def commenter(comment_id: str) -> str:
    """Who wrote the comment `page_comment` makes."""
    return f"user-{comment_id}"


def whatsapp_message(waba: str, wamid: str, text: str, sender: str = CUSTOMER) -> dict[str, Any]:
    return whatsapp_delivery(
        waba,
        {
            "contacts": [{"wa_id": sender, "profile": {"name": "Customer"}}],
            "messages": [
                {
                    "id": wamid,
                    "from": sender,
                    "timestamp": str(int(time.time())),
                    "type": "text",
                    "text": {"body": text},
                }
            ],
        },
    )


BSUID = "GB.13491208655302741918"
"""The business-scoped user id of a customer who hid their number behind a username."""
USERNAME = "demo.customer"


def whatsapp_username_message(waba: str, wamid: str, text: str, bsuid: str = BSUID) -> dict[str, Any]:
    """A message from a customer with a username: their BSUID (`from_user_id`, the contact's
    `user_id`) and username, no phone number (no `from`, no `wa_id`), as Meta's "Business-scoped
    user IDs" page shows it."""
    return whatsapp_delivery(
        waba,
        {
            "contacts": [{"user_id": bsuid, "profile": {"name": "Customer", "username": USERNAME}}],
            "messages": [
                {
                    "id": wamid,
                    "from_user_id": bsuid,
                    "timestamp": str(int(time.time())),
                    "type": "text",
                    "text": {"body": text},
                }
            ],
        },
    )


def whatsapp_status(waba: str, wamid: str, status: str, recipient: str = CUSTOMER) -> dict[str, Any]:
    return whatsapp_delivery(
        waba,
        {"statuses": [{"id": wamid, "status": status, "timestamp": str(int(time.time())), "recipient_id": recipient}]},
    )


def direct_message(product: str, account: str, mid: str, text: str, sender: str = CUSTOMER) -> dict[str, Any]:
    """A Messenger (`product` "page") or Instagram ("instagram") direct message to `account` (the
    Page or the Instagram account), as the `messages` webhook field sends it."""
    now_ms = int(time.time() * 1000)
    return {
        "object": product,
        "entry": [
            {
                "id": account,
                "time": now_ms,
                "messaging": [
                    {
                        "sender": {"id": sender},
                        "recipient": {"id": account},
                        "timestamp": now_ms,
                        "message": {"mid": mid, "text": text},
                    }
                ],
            }
        ],
    }


def page_comment(page: str, comment_id: str, text: str, post_id: str = "post-1") -> dict[str, Any]:
    return {
        "object": "page",
        "entry": [
            {
                "id": page,
                "time": int(time.time()),
                "changes": [
                    {
                        "field": "feed",
                        "value": {
                            "item": "comment",
                            "verb": "add",
                            "comment_id": comment_id,
                            "post_id": f"{page}_{post_id}",
                            "message": text,
                            "from": {"id": commenter(comment_id), "name": "Someone"},
                            "created_time": int(time.time()),
                        },
                    }
                ],
            }
        ],
    }


def whatsapp_delivery(
    waba: str, value: dict[str, Any], phone_number_id: str | None = None, field: str = "messages"
) -> dict[str, Any]:
    """The envelope of a WhatsApp webhook `field` around `value` (its contacts, messages, statuses or
    echoes), to `waba`'s phone-number id `phone_number_id` (one of its own by default)."""
    return {
        "object": "whatsapp_business_account",
        "entry": [
            {
                "id": waba,
                "changes": [
                    {
                        "field": field,
                        "value": {
                            "messaging_product": "whatsapp",
                            "metadata": {
                                "display_phone_number": "15550000000",
                                "phone_number_id": phone_number_id or f"{waba}-phone",
                            },
                            **value,
                        },
                    }
                ],
            }
        ],
    }


def whatsapp_text_to(waba: str, phone_number_id: str, wamid: str, text: str, sender: str = CUSTOMER) -> dict[str, Any]:
    """A customer's WhatsApp text to a given phone-number id of `waba` (a tenant's bound number)."""
    delivery = whatsapp_message(waba, wamid, text, sender)
    delivery["entry"][0]["changes"][0]["value"]["metadata"]["phone_number_id"] = phone_number_id
    return delivery


def whatsapp_echo(waba: str, phone_number_id: str, wamid: str, text: str, to: str = CUSTOMER) -> dict[str, Any]:
    """A message a person sent `to` from the WhatsApp Business app, as `smb_message_echoes` echoes it."""
    echo = {"from": "15550000000", "to": to, "id": wamid, "timestamp": str(int(time.time())), "type": "text"}
    return whatsapp_delivery(
        waba, {"message_echoes": [{**echo, "text": {"body": text}}]}, phone_number_id, field="smb_message_echoes"
    )
