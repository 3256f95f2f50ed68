"""`lanectl load --shape`: who writes to whom, and on which of Meta's products.

Each shape is an endless stream of deliveries shaped as Meta sends them (ops/drive/meta_payloads.py
and Meta's documented webhooks), padded to about `size` bytes:

- `texts`: WhatsApp texts, a different customer each (the sender cycles over 100,000 numbers),
  round-robin over the businesses. What the soak always sent.
- `one-to-many`: one customer writing to every business in turn: everything they send lands in
  one person's partition.
- `long-history`: one customer writing to one business: one person's partition and one tenant's
  history grow together.
- `new-customers`: a customer never seen before in every message.
- `statuses`: for every reply the businesses sent earlier, WhatsApp's sent, delivered and read, each
  a delivery of its own, to the customer the reply went to.
- `products`: WhatsApp texts, Messenger messages and Instagram direct messages in turn, each from
  its own business (a WhatsApp account, a Page, an Instagram account).
- `auto-reply`: conversations with the local tenant that has auto-reply on (stacks/config/
  environments.py `LOCAL_SHOP`), written to its bound number: `BURST_CUSTOMERS` customers at a time
  each send a burst of `BURST_TEXTS` texts, interleaved, then the next customers; each burst is one
  turn of the ai lane, answered at the Graph endpoint.

A delivery says what its stored item is (`item`: a message, or a reply's status) so the watcher
reads the right key back.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from ops.drive import meta_payloads

MESSAGE, STATUS = "msg", "status"
"""What a delivery's stored item is: a message (its `stored_at`) or a status (its `applied_at`)."""

STATUS_STEPS = ("sent", "delivered", "read")
KNOWN_NUMBERS = 100_000
"""How many customers `texts` cycles over."""
BURST_CUSTOMERS = 25
"""Customers writing at once in `auto-reply`: at 50 a second, a burst's texts come half a second apart."""
BURST_TEXTS = 3
"""Texts in one customer's burst in `auto-reply` ("hi", "are you open", "on Sunday?")."""


@dataclass(frozen=True)
class Delivery:
    tenant: str
    message_id: str
    body: bytes
    sender: str
    """The person the stored item is about: the message's sender, the status's recipient."""
    item: str = MESSAGE


def text_of(size: int, seed: int) -> str:
    words = ("order", "status", "please", "thanks", "delivery", "tomorrow", "refund", "hello", "where", "is")
    out: list[str] = []
    length = 0
    index = seed
    while length < size:
        word = words[index % len(words)]
        out.append(word)
        length += len(word) + 1
        index = index * 31 + 7
    return " ".join(out)[:size]


def _padded(
    payload: dict[str, Any], size: int, seed: int, text_at: Callable[[dict[str, Any]], dict[str, Any]]
) -> bytes:
    """The payload with its text (the mapping `text_at` finds, key `body` or `text`) filled so the
    whole is about `size` bytes."""
    holder = text_at(payload)
    field = "body" if "body" in holder else "text"
    overhead = len(json.dumps(payload).encode())
    holder[field] = text_of(max(1, size - overhead), seed)
    return json.dumps(payload, ensure_ascii=False).encode("utf-8")


def _whatsapp_text(tenant: str, message_id: str, sender: str, size: int, seed: int) -> Delivery:
    payload = meta_payloads.whatsapp_message(tenant, message_id, "", sender=sender)
    body = _padded(payload, size, seed, lambda p: p["entry"][0]["changes"][0]["value"]["messages"][0]["text"])
    return Delivery(tenant, message_id, body, sender)


def _direct_message(product: str, tenant: str, message_id: str, sender: str, size: int, seed: int) -> Delivery:
    """A Messenger (`page`) or Instagram (`instagram`) direct message, as the `messages` webhook
    field sends it."""
    payload = meta_payloads.direct_message(product, tenant, message_id, "", sender=sender)
    body = _padded(payload, size, seed, lambda p: p["entry"][0]["messaging"][0]["message"])
    return Delivery(tenant, message_id, body, sender)


def _texts(run: str, businesses: int, size: int, customer: Callable[[int], str]) -> Iterator[Delivery]:
    sequence = 0
    while True:
        tenant = f"waba-load-{sequence % businesses:03d}"
        yield _whatsapp_text(tenant, f"wamid.load.{run}.{sequence}", customer(sequence), size, sequence)
        sequence += 1


def _long_history(run: str, size: int) -> Iterator[Delivery]:
    sequence = 0
    while True:
        yield _whatsapp_text("waba-load-000", f"wamid.load.{run}.{sequence}", "447700900001", size, sequence)
        sequence += 1


def _statuses(run: str, businesses: int) -> Iterator[Delivery]:
    """Each reply gets its three statuses, spread out: reply n's `sent` goes out beside reply
    n-1's `delivered` and reply n-2's `read`, as a busy business's statuses interleave."""
    reply = 0
    while True:
        for step, name in enumerate(STATUS_STEPS):
            earlier = reply - step
            if earlier < 0:
                continue
            tenant = f"waba-load-{earlier % businesses:03d}"
            recipient = f"4477009{earlier % KNOWN_NUMBERS:05d}"
            wamid = f"wamid.reply.{run}.{earlier}"
            payload = meta_payloads.whatsapp_status(tenant, wamid, name, recipient=recipient)
            yield Delivery(tenant, wamid, json.dumps(payload).encode(), recipient, STATUS)
        reply += 1


def _products(run: str, businesses: int, size: int) -> Iterator[Delivery]:
    sequence = 0
    while True:
        business = f"{(sequence // 3) % businesses:03d}"
        sender = f"{sequence % KNOWN_NUMBERS:05d}"
        turn = sequence % 3
        if turn == 0:
            yield _whatsapp_text(
                f"waba-load-{business}", f"wamid.load.{run}.{sequence}", f"4477009{sender}", size, sequence
            )
        elif turn == 1:
            yield _direct_message(
                "page", f"page-load-{business}", f"m_load.{run}.{sequence}", f"psid-{sender}", size, sequence
            )
        else:
            yield _direct_message(
                "instagram", f"ig-load-{business}", f"aWdfload.{run}.{sequence}", f"igsid-{sender}", size, sequence
            )
        sequence += 1


def _auto_reply(run: str, size: int) -> Iterator[Delivery]:
    from stacks.config.environments import LOCAL_ASSETS, LOCAL_SHOP

    shop = LOCAL_ASSETS.tenants[LOCAL_SHOP]
    waba, number = shop.waba[0], shop.phones[0]
    sequence = 0
    while True:
        group, within = divmod(sequence, BURST_CUSTOMERS * BURST_TEXTS)
        customer = f"4478{(group * BURST_CUSTOMERS + within % BURST_CUSTOMERS) % KNOWN_NUMBERS:08d}"
        message_id = f"wamid.load.{run}.{sequence}"
        payload = meta_payloads.whatsapp_text_to(waba, number, message_id, "", sender=customer)
        body = _padded(payload, size, sequence, lambda p: p["entry"][0]["changes"][0]["value"]["messages"][0]["text"])
        yield Delivery(waba, message_id, body, customer)
        sequence += 1


SHAPES: dict[str, Callable[[str, int, int], Iterator[Delivery]]] = {
    "texts": lambda run, businesses, size: _texts(run, businesses, size, lambda n: f"4477009{n % KNOWN_NUMBERS:05d}"),
    "one-to-many": lambda run, businesses, size: _texts(run, businesses, size, lambda n: "447700900001"),
    "long-history": lambda run, businesses, size: _long_history(run, size),
    "new-customers": lambda run, businesses, size: _texts(
        run, businesses, size, lambda n: f"44{int(run, 16) % 10**4:04d}{n:08d}"
    ),
    "statuses": lambda run, businesses, size: _statuses(run, businesses),
    "products": _products,
    "auto-reply": lambda run, businesses, size: _auto_reply(run, size),
}
"""Every shape by name; `texts` first, the default."""


def deliveries(shape: str, businesses: int, size: int) -> Iterator[Delivery]:
    """`shape`'s deliveries from `businesses` accounts, about `size` bytes each (statuses are as
    small as Meta's); a run's ids never repeat another run's."""
    return SHAPES[shape](uuid.uuid4().hex[:8], businesses, size)
