"""The demo's auto-reply scene: a customer's three quick WhatsApp texts to shop-1 (auto-reply on
locally) answered by one reply at the Graph endpoint with no job posted by anyone, then a person's
echo from the WhatsApp Business app silencing the model in that conversation."""

from __future__ import annotations

import time
import uuid
from typing import TYPE_CHECKING

from ops.drive import meta_payloads as meta
from ops.drive import poll
from stacks.config.environments import LOCAL_ASSETS, LOCAL_SHOP

if TYPE_CHECKING:
    from ops.demo.story import Demo

SHOP = LOCAL_ASSETS.tenants[LOCAL_SHOP]
QUIET_SECONDS = 6
"""How long the scene waits for a reply that must not come: the ai lane's local debounce (1 s)
several times over, with its model and send."""


def auto_reply(d: Demo) -> None:
    d.step(
        "A customer is answered with no product in between",
        """shop-1 has auto-reply on (Environment.auto_reply). Its customer sends three WhatsApp texts
        a moment apart; the messages lane stores each and hands it to the ai lane, which waits a
        debounce after the newest and answers all three in one reply, sent through the Graph API.
        Nobody posts a job. Then a person at the shop writes to the customer from the WhatsApp
        Business app: its echo pauses the model in that conversation, so the customer's next text
        is left to the person.""",
    )
    customer = f"4477009{uuid.uuid4().int % 100000:05d}"
    waba, number = SHOP.waba[0], SHOP.phones[0]
    jobs_before = len(d.s.scan("JobsTableName"))
    texts = ("hi", "are you open", "on Sunday?")
    statuses = [
        d.s.client.deliver(meta.whatsapp_text_to(waba, number, f"wamid.auto-{customer}-{n}", text, customer)).status
        for n, text in enumerate(texts)
    ]

    def replies() -> list:
        return [m for m in d.s.runtime.graph.outbox() if m.recipient == customer]

    poll(replies, 30, interval=0.5)
    time.sleep(QUIET_SECONDS)  # a second reply, if the burst were answered twice, would be here by now
    sent = replies()
    jobs_after = len(d.s.scan("JobsTableName"))
    d.expect(
        "auto-reply",
        "three quick texts get one reply from shop-1's number, and no job was posted",
        statuses == [200] * 3 and len(sent) == 1 and sent[0].business_id == number and jobs_after == jobs_before,
        f"{statuses}; {len(sent)} reply; jobs {jobs_before} -> {jobs_after}",
    )
    echo = meta.whatsapp_echo(waba, number, f"wamid.echo-{customer}", "Hi, Sam here, I'll take it from here", customer)
    d.s.client.deliver(echo)
    time.sleep(2)
    d.s.client.deliver(meta.whatsapp_text_to(waba, number, f"wamid.auto-{customer}-9", "thanks Sam!", customer))
    time.sleep(QUIET_SECONDS)
    after = replies()
    d.expect(
        "auto-reply",
        "after a person's echo the model stays quiet in that conversation",
        len(after) == 1,
        f"{len(after) - 1} more replies",
    )


SCENES = (auto_reply,)
