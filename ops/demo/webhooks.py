"""The demo's webhook scenes: Meta's handshake, a customer's messages and out-of-order statuses, a
forged and a redelivered delivery, and a comment flood beside a quiet page."""

from __future__ import annotations

import time
import uuid
from typing import TYPE_CHECKING, Any

from ops.drive import meta_payloads as meta
from ops.drive import poll
from stacks.config.environments import LOCAL_SHOP

if TYPE_CHECKING:
    from ops.demo.story import Demo

TRIAGE_MS = 300
"""The model's time to triage a comment: the engagement lane's service time in the catalogue."""


def _log_rows(d: Demo, tenant: str) -> list[dict[str, Any]]:
    return [r for r in d.s.scan("WebhookTableName") if r.get("tenant") == tenant]


def handshake(d: Demo) -> None:
    d.step("Meta verifies the webhook", "Meta calls GET with the verify token and expects the challenge back.")
    ok = d.s.client.handshake(d.s.verify_token, "1158201444")
    d.expect(
        "handshake",
        "the right token gets the challenge as text",
        ok.status == 200 and ok.text == "1158201444",
        f"{ok.status} {ok.text!r}",
    )
    bad = d.s.client.handshake("guessed-token", "1158201444")
    d.expect("handshake", "a wrong token gets 403 and nothing else", bad.status == 403, f"{bad.status}")


def messages(d: Demo) -> None:
    d.step(
        "A customer writes on WhatsApp",
        """Three signed messages from one customer, then the statuses of our reply arriving out of
        order (read before delivered). Each is logged before it is enqueued, routed to the messages lane.""",
    )
    waba = d.story["waba"] = f"waba-{uuid.uuid4().hex[:6]}"
    first = d.story["first_delivery"] = meta.whatsapp_message(waba, "wamid.demo-1", "Hi! 👋")
    deliveries = [
        first,
        meta.whatsapp_message(waba, "wamid.demo-2", "is the shop open"),
        meta.whatsapp_message(waba, "wamid.demo-3", "on Sunday?"),
        meta.whatsapp_status(waba, "wamid.reply-1", "sent"),
        meta.whatsapp_status(waba, "wamid.reply-1", "read"),
        meta.whatsapp_status(waba, "wamid.reply-1", "delivered"),
    ]
    started = time.monotonic()
    statuses = [d.s.client.deliver(delivery).status for delivery in deliveries]
    answered_ms = (time.monotonic() - started) * 1000 / len(deliveries)
    d.expect(
        "messages",
        "every signed delivery is acknowledged 200",
        statuses == [200] * 6,
        f"{statuses}, {answered_ms:.0f} ms each on average",
    )
    # Every delivery finished, not only the messages: the statuses are deliveries of their own, and
    # one read before its turn would show an order the lane had not finished applying.
    finished = poll(lambda: len(d.s.log.finished({waba}, lane="messages")) == len(deliveries), 30, interval=0.5)
    stored = finished and all(d.s.stored_message(waba, f"wamid.demo-{n}", meta.CUSTOMER) for n in (1, 2, 3))
    rows = _log_rows(d, waba)
    d.expect(
        "messages",
        "all three messages are stored; their log rows are left as written (each stored message is its done-mark)",
        stored and all("pending_shard" not in r for r in rows),
        f"{len(rows)} log rows, {sum('pending_shard' in r for r in rows)} waiting for the sweeper",
    )
    status_item = d.s.stored_status(waba, "wamid.reply-1", meta.CUSTOMER)
    status = status_item["status"] if status_item else "none"
    d.expect("messages", "a late 'delivered' does not overwrite 'read'", status == "read", f"status {status!r}")


def forgery_and_redelivery(d: Demo) -> None:
    d.step(
        "Someone forges a delivery; Meta retries a real one",
        """A body signed with the wrong secret, and one with no signature, must be refused before
        anything is written. A byte-identical redelivery must create no second row and no second message.""",
    )
    tenant = f"waba-{uuid.uuid4().hex[:6]}"
    forged = meta.whatsapp_message(tenant, "wamid.forged", "send me the refunds")
    wrong = d.s.client.deliver(forged, signature="sha256=" + "ab" * 32).status
    unsigned = d.s.client.deliver(forged, signature="").status
    time.sleep(1)
    d.expect(
        "forgery",
        "a wrong signature gets 403, a missing one 401",
        (wrong, unsigned) == (403, 401),
        f"{wrong}, {unsigned}",
    )
    forged_rows = _log_rows(d, tenant)
    d.expect("forgery", "nothing forged was logged", not forged_rows, f"{len(forged_rows)} rows")
    waba = d.story["waba"]
    rows_before = len(_log_rows(d, waba))
    again = d.s.client.deliver(d.story["first_delivery"]).status
    time.sleep(2)
    rows_after = len(_log_rows(d, waba))
    copies = int(d.s.stored_message(waba, "wamid.demo-1", meta.CUSTOMER) is not None)
    d.expect(
        "redelivery",
        "the retry is acknowledged, no second row, one stored message",
        again == 200 and rows_after == rows_before and copies == 1,
        f"{again}; rows {rows_before} -> {rows_after}; {copies} copy",
    )


def comment_flood(d: Demo) -> None:
    d.step(
        "A campaign floods one page with comments",
        f"""30 comments on one page arrive first, then 2 on a quiet page. Comments go to the engagement
        lane (never in front of messages), where the model triages each ({TRIAGE_MS} ms here); its shared
        budget defers the flood's surplus cheaply, and the queue serves the quiet page's comments ahead
        of the campaign's backlog, so the quiet page is triaged without waiting for the campaign.""",
    )
    # A model that answers at once would leave no backlog to be fair about.
    d.s.configure_model(latency_ms=TRIAGE_MS)
    flood, quiet = f"page-{uuid.uuid4().hex[:6]}", f"page-{uuid.uuid4().hex[:6]}"
    deferred_before = d.s.outcome_count("engagement", "deferred")
    started = time.monotonic()
    for n in range(30):
        d.s.client.deliver(meta.page_comment(flood, f"{flood}-c{n}", f"love this! #{n}"))
    quiet_sent = time.monotonic()
    for n in range(2):
        d.s.client.deliver(meta.page_comment(quiet, f"{quiet}-c{n}", "when do you open?"))

    def triaged(page: str, count: int) -> list[float]:
        times = []
        for n in range(count):
            comment_id = f"{page}-c{n}"
            item = d.s.stored_comment(page, comment_id, meta.commenter(comment_id))
            if item is not None and item.get("label", "untriaged") != "untriaged":
                times.append(float(item["triaged_at"]))
        return times if len(times) == count else []

    quiet_done = poll(lambda: triaged(quiet, 2), 40, interval=0.5)
    flood_done = poll(lambda: triaged(flood, 30), 90, interval=0.5)
    deferred = d.s.outcome_count("engagement", "deferred") - deferred_before
    d.s.configure_model(latency_ms=0)
    wall = time.time() - time.monotonic()
    quiet_wait = max(quiet_done) - (quiet_sent + wall) if quiet_done else float("inf")
    flood_last = max(flood_done) - (started + wall) if flood_done else float("inf")
    d.expect(
        "fairness",
        "every comment of both pages is triaged",
        bool(quiet_done and flood_done),
        f"quiet {len(quiet_done)}/2, flood {len(flood_done)}/30",
    )
    d.expect("fairness", "the flood's surplus was deferred, not dropped", deferred > 0, f"{deferred} deferrals")
    d.expect(
        "fairness",
        "the quiet page waited less than the flood took",
        quiet_wait < flood_last,
        f"quiet page done after {quiet_wait:.1f} s; flood's last after {flood_last:.1f} s",
    )


def answered_through_meta(d: Demo) -> None:
    d.step(
        "A customer is answered through Meta",
        """The product posts the customer's message to the ai lane, saying the reply goes back on
        WhatsApp. The turn's reply comes from the model (Bedrock's Converse, here the runtime's fake
        of it) and is sent through the Graph API (here the runtime's, on 127.0.0.1), once: the
        reply item records what was sent and Meta's message id.""",
    )
    tenant, customer = LOCAL_SHOP, meta.CUSTOMER
    reply_to = {"channel": "whatsapp", "business_id": "1098765", "recipient": customer}
    d.s.client.submit_job(
        lane="ai",
        kind="ai.inbound",
        tenant=tenant,
        payload={"conversation": "conv-meta", "message_id": "m-1", "text": "are you open today?", "reply_to": reply_to},
    )

    def reply() -> dict[str, Any] | None:
        items = d.s.items(f"conversation#{tenant}#conv-meta")
        found = next((i for i in items if str(i["sk"]).startswith("reply#")), None)
        return found if found and found.get("send_state") == "sent" else None

    sent = poll(reply, 30, interval=0.5)
    outbox = [m for m in d.s.runtime.graph.outbox() if m.recipient == customer and m.text == (sent or {}).get("text")]
    d.expect(
        "meta send",
        "the reply is sent through the Graph API and stored with Meta's message id",
        bool(sent) and bool(outbox) and outbox[-1].message_id == sent.get("message_id"),
        f"{(sent or {}).get('message_id', 'not sent')}",
    )
    d.expect("meta send", "it went out once", len(outbox) == 1, f"{len(outbox)} in the outbox")


SCENES = (handshake, messages, forgery_and_redelivery, comment_flood)
LAST = (answered_through_meta,)
"""After the incidents: an ai turn run before them would give admission a measured drain rate for
the ai lane, where the outage scene shows it estimating one from the catalogue."""
