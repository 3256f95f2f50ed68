"""What it costs a webhook-log row to carry every named person's hash (`sender_hashes`), by
delivery shape: the row's bytes and write units without and with them, and the items the
messages task wrote per person for the same delivery (tasks/privacy.delivery_index), which were
the only way to find such a delivery before and which a row carrying the hashes does without.
Sizes are DynamoDB's item size (attribute names plus values); a write unit is 1 KB of it, and each
per-person item (a key of about 110 bytes) is one. Nothing is timed.

    .venv/bin/python -m bench.row_hashes
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

from pipeline import schema
from pipeline.adapters.webhook_log import _row
from pipeline.domain import retention, senders
from pipeline.domain.webhook import body as webhook_body
from pipeline.domain.webhook import delivery as webhook
from pipeline.domain.webhook import routing
from pipeline.domain.webhook.delivery import LogEntry

KEY = b"bench-sender-key-0123456789abcdefghijklmnop"
NOW = 1_767_225_600.0
WABA = "102290129340398"
WAMID = "wamid.HBgLMTU1NTAwMDEyMzQVAgARGBI5QTNDQTVCM0Q0Q0Q2RTY3RTcA"


def _size(item: Mapping[str, Any]) -> int:
    total = 0
    for name, value in item.items():
        ((kind, raw),) = value.items()
        total += len(name.encode())
        if kind == "S":
            total += len(raw.encode())
        elif kind == "N":
            total += math.ceil(len(str(raw).lstrip("-").replace(".", "").lstrip("0") or "0") / 2) + 1
        elif kind == "B":
            total += len(raw)
        elif kind == "BS":
            total += sum(len(part) for part in raw)
        elif kind == "SS":
            total += sum(len(part.encode()) for part in raw)
    return total


def _units(size: int) -> int:
    return max(1, math.ceil(size / 1024))


def _number(n: int) -> str:
    return f"4477009{n:05d}"


def _whatsapp(messages: list[dict], statuses: list[dict], contacts: list[dict]) -> dict:
    value: dict[str, Any] = {
        "messaging_product": "whatsapp",
        "metadata": {"display_phone_number": "15550100", "phone_number_id": "106540352242922"},
    }
    if contacts:
        value["contacts"] = contacts
    if messages:
        value["messages"] = messages
    if statuses:
        value["statuses"] = statuses
    return {
        "object": "whatsapp_business_account",
        "entry": [{"id": WABA, "changes": [{"value": value, "field": "messages"}]}],
    }


def batch_of_texts(people: int) -> dict:
    return _whatsapp(
        [
            {
                "from": _number(n),
                "id": f"{WAMID}{n:03d}",
                "timestamp": "1767225600",
                "text": {"body": f"Hello, is my order {n} on its way? I ordered it on Monday."},
                "type": "text",
            }
            for n in range(people)
        ],
        [],
        [{"profile": {"name": f"Customer {n}"}, "wa_id": _number(n)} for n in range(people)],
    )


def statuses_of_a_campaign(people: int) -> dict:
    return _whatsapp(
        [],
        [
            {
                "id": f"{WAMID}{n:05d}",
                "status": "delivered",
                "timestamp": "1767225600",
                "recipient_id": _number(n),
                "conversation": {"id": f"conv{n:028d}", "origin": {"type": "marketing"}},
                "pricing": {"billable": True, "pricing_model": "CBP", "category": "marketing"},
            }
            for n in range(people)
        ],
        [],
    )


def messenger_events(people: int) -> dict:
    page = "106540352242922"
    return {
        "object": "page",
        "entry": [
            {
                "id": page,
                "time": 1767225600000,
                "messaging": [
                    {
                        "sender": {"id": f"2461803{n:09d}"},
                        "recipient": {"id": page},
                        "timestamp": 1767225600000,
                        "message": {"mid": f"m_{'x' * 80}{n:03d}", "text": "Do you ship to Lisbon?"},
                    }
                    for n in range(people)
                ],
            }
        ],
    }


def _row_of(payload: dict, *, with_hashes: bool) -> dict[str, Any]:
    raw = json.dumps(payload, separators=(",", ":")).encode()
    person, several = senders.named_on_row(payload)
    entry = LogEntry(
        id=webhook.log_id(raw),
        received_at=NOW,
        body=webhook_body.pack(raw),
        route=routing.route(payload),
        expires_at=retention.expiry(NOW, 7 * 86_400),
        sender_hash=None if person is None else senders.sender_hash(KEY, person),
        named=tuple(sorted(senders.sender_hash(KEY, one) for one in several)) if with_hashes else (),
    )
    return _row(entry)


def _index_items(payload: dict, *, row_names_everyone: bool) -> int:
    """Write units of the per-person items the messages task writes for a delivery naming several
    (one standalone put each, each well under 1 KB)."""
    people = senders.people_in_delivery(payload)
    return 0 if row_names_everyone or len(people) < 2 else len(people)


def main(argv: list[str] | None = None) -> None:
    del argv
    shapes = [
        ("WhatsApp texts from 2 people", batch_of_texts(2)),
        ("WhatsApp texts from 5 people", batch_of_texts(5)),
        ("Messenger messages from 3 people", messenger_events(3)),
        ("campaign statuses, 10 recipients", statuses_of_a_campaign(10)),
        ("campaign statuses, 100 recipients", statuses_of_a_campaign(100)),
        ("campaign statuses, 1000 recipients", statuses_of_a_campaign(1000)),
    ]
    header = f"{'delivery':36} {'people':>6} {'row bytes':>15} {'row WCU':>9} {'per-person WCU':>15} {'total WCU':>11}"
    print(header)
    print("-" * len(header))
    for title, payload in shapes:
        people = len(senders.people_in_delivery(payload))
        before = _size(_row_of(payload, with_hashes=False))
        after = _size(_row_of(payload, with_hashes=True))
        carried = 2 <= people <= senders.MAX_NAMED_ON_ROW
        index_before = _index_items(payload, row_names_everyone=False)
        index_after = _index_items(payload, row_names_everyone=carried)
        print(
            f"{title:36} {people:>6} {before:>6} -> {after:>6} {_units(before):>4} -> {_units(after):<3}"
            f" {index_before:>6} -> {index_after:<6} {_units(before) + index_before:>4} -> "
            f"{_units(after) + index_after}"
        )
    print(
        f"\nEach hash is {senders.HASH_HEX_DIGITS // 2} bytes in the Binary Set `{schema.SENDER_HASHES}` "
        f"({len(schema.SENDER_HASHES)} bytes of name once); as hex strings it would be {senders.HASH_HEX_DIGITS}."
    )


if __name__ == "__main__":
    main()
