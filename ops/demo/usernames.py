"""The demo's username scene: a WhatsApp customer who hid their number behind a username, known
only by their business-scoped user id (BSUID), is stored, answered, traced and erased like anyone."""

from __future__ import annotations

import json
import re
import uuid
from typing import TYPE_CHECKING, Any

from ops.drive import meta_payloads as meta
from ops.drive import poll
from stacks.config.environments import LOCAL_ASSETS, LOCAL_SHOP

if TYPE_CHECKING:
    from ops.demo.story import Demo

SHOP = LOCAL_ASSETS.tenants[LOCAL_SHOP]
"""The local shop, which answers its customers by itself (auto-reply on for WhatsApp)."""


def username_customer(d: Demo) -> None:
    d.step(
        "A customer with a username writes, with no phone number",
        """Meta withholds the number of a customer who adopted a username: the delivery names them by
        their business-scoped user id (BSUID) alone. The message is stored in the BSUID's partition,
        the reply goes to the BSUID (the Cloud API's `recipient`, not `to`), on-call traces the
        delivery without seeing who it is, and an erasure by the BSUID leaves nothing of them. The
        shop answers by itself (auto-reply): nobody posts a job.""",
    )
    from pipeline.domain.webhook import delivery as webhook

    waba, bsuid = SHOP.waba[0], meta.BSUID
    wamid = f"wamid.demo-username-{uuid.uuid4().hex[:6]}"
    delivery = meta.whatsapp_username_message(waba, wamid, "do you deliver on Sunday?")
    delivery["entry"][0]["changes"][0]["value"]["metadata"]["phone_number_id"] = SHOP.phones[0]
    status = d.s.client.deliver(delivery).status
    stored = poll(lambda: d.s.stored_message(waba, wamid, bsuid), 30, interval=0.5)
    d.expect(
        "username",
        "the message is stored under the customer's BSUID",
        status == 200 and bool(stored) and (stored or {}).get("username") == meta.USERNAME,
        f"{status}; {'stored' if stored else 'not stored'}",
    )

    def reply() -> dict[str, Any] | None:
        items = d.s.items(f"conversation#{LOCAL_SHOP}#{bsuid}")
        found = next((i for i in items if str(i["sk"]).startswith("reply#")), None)
        return found if found and found.get("send_state") == "sent" else None

    sent = poll(reply, 30, interval=0.5)
    outbox = [m for m in d.s.runtime.graph.outbox() if m.recipient == bsuid]
    d.expect(
        "username",
        "the reply is sent once, addressed to the BSUID",
        bool(sent) and len(outbox) == 1 and outbox[0].message_id == (sent or {}).get("message_id"),
        f"{len(outbox)} in the outbox to the BSUID",
    )

    traced = d.lanectl("trace", webhook.log_id(json.dumps(delivery, ensure_ascii=False).encode("utf-8")))
    d.expect(
        "username",
        "on-call traces the delivery to its stored message, naming nobody",
        traced.returncode == 0
        and any(
            line.strip().startswith(f"message      {wamid}") and ": stored" in line
            for line in traced.stdout.splitlines()
        )
        and bsuid not in traced.stdout,
        f"exit {traced.returncode}",
    )

    erased = d.lanectl("erase", "--sender", bsuid, "--wait", "60")
    done = re.search(r"status: (\w+)", erased.stdout)
    gone = d.s.stored_message(waba, wamid, bsuid) is None
    d.expect(
        "username",
        "an erasure by the BSUID leaves nothing of the customer",
        erased.returncode == 0 and bool(done) and gone and bsuid not in erased.stdout,
        f"{done.group(1) if done else 'no status'}; message {'gone' if gone else 'still stored'}",
    )


def stored_line(line: str, wamid: str) -> bool:
    """The trace's line for the message: stored, whether the row is done or not yet."""
    return line.split()[:2] == ["message", wamid] and ": stored" in line


SCENES = (username_customer,)
