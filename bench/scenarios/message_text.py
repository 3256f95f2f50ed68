"""WhatsApp text deliveries of a chosen size, in words a customer writes: they compress about as real
messages do, where a repeated phrase would compress to nothing (scenario 10 and the consumer bench)."""

from __future__ import annotations

import json
import random
from typing import Any


def whatsapp_delivery(meta: Any, waba: str, wamid: str, n: int, size: int) -> dict[str, Any]:
    """A WhatsApp text delivery of about `size` bytes."""
    empty = len(json.dumps(meta.whatsapp_message(waba, wamid, ""), ensure_ascii=False).encode())
    return meta.whatsapp_message(waba, wamid, varied_text(n, max(1, size - empty)))


def varied_text(seed: int, size: int) -> str:
    """`size` characters of words from a customer-service vocabulary, with a number now and then:
    compresses about as a real message does, where a repeated phrase would compress to nothing."""
    rng = random.Random(seed)
    words: list[str] = []
    length = 0
    while length < size:
        word = rng.choice(VOCABULARY) if rng.random() > 0.1 else str(rng.randint(1, 99999))
        words.append(word)
        length += len(word) + 1
    return " ".join(words)[:size]


_WORDS = (
    "hello hi please thanks order delivery refund where when why how tomorrow today yesterday parcel "
    "address street city postcode number invoice payment card bank transfer failed cancelled arrived "
    "late early driver store shop open closed weekend sunday monday price discount coupon code size "
    "colour blue red black white shoes jacket shirt dress return exchange warranty broken damaged box "
    "email phone call message reply waiting still again soon urgent help support account password login "
    "app website cart checkout shipping tracking courier customs fee tax receipt confirm change update"
)
VOCABULARY = tuple(_WORDS.split(" "))
