"""The demo's replay after a fix: on-call traces one of the customer's deliveries, lists the
tenant's window, and replays it with `lanectl replay` once the fix is out; each stored message is
written again exactly once, and the same replay run a second time changes nothing."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from ops.drive import meta_payloads as meta
from ops.drive import poll
from pipeline import schema
from pipeline.domain.webhook import delivery as webhook

if TYPE_CHECKING:
    from ops.demo.story import Demo

GARBLED = "\ufffd\ufffd garbled by release 1.4.2"
WAMIDS = ("wamid.demo-1", "wamid.demo-2", "wamid.demo-3")


def _garble(d: Demo, waba: str) -> None:
    """What the faulty release left: the customer's stored texts overwritten (the bug's effect)."""
    from pipeline.adapters.items import to_item
    from pipeline.tasks.messages import message_key

    for wamid in WAMIDS:
        d.s.aws("dynamodb").update_item(
            TableName=d.s.outputs["DataTableName"],
            Key=to_item(message_key(waba, wamid, d.s.person_hash(meta.CUSTOMER))),
            UpdateExpression="SET #text = :garbled",
            ExpressionAttributeNames={"#text": "text"},
            ExpressionAttributeValues=to_item({":garbled": GARBLED}),
        )


def _stored(d: Demo, waba: str) -> list[dict[str, Any]]:
    return [d.s.stored_message(waba, wamid, meta.CUSTOMER) or {} for wamid in WAMIDS]


def _fixed(d: Demo, waba: str) -> bool:
    return all(item.get("text") != GARBLED and item.get(schema.GENERATION) == 1 for item in _stored(d, waba))


def replay_after_fix(d: Demo) -> None:
    d.step(
        "A bad release garbled stored messages; on-call replays them after the fix",
        """The customer asks what became of their first message: on-call traces it from its delivery
        and lists the tenant's deliveries. A release had stored their texts garbled; the fix is out,
        but each delivery's done-mark says the work was done. `lanectl replay` sends the window
        again as generation 1: each task runs again once and its writes replace the garbled ones.
        Run a second time by mistake, the same replay changes nothing.""",
    )
    waba = d.story["waba"]
    # The id the door gave it: a digest of the bytes as the client sent them (local_aws/client.py).
    first = webhook.log_id(json.dumps(d.story["first_delivery"], ensure_ascii=False).encode("utf-8"))
    traced = d.lanectl("trace", first)
    d.expect(
        "replay",
        "lanectl trace shows one of the customer's deliveries and what it stored",
        traced.returncode == 0 and "message      wamid.demo-1" in traced.stdout,
        f"exit {traced.returncode}",
    )
    listed = d.lanectl("trace", "--tenant", waba, "--since", "30m")
    d.expect(
        "replay",
        "the tenant's window lists its six deliveries, with what the scan read",
        listed.returncode == 0 and "6 delivery(ies)" in listed.stdout and "row(s) scanned" in listed.stdout,
        f"exit {listed.returncode}",
    )
    _garble(d, waba)
    window = ("--lane", "messages", "--tenant", waba, "--since", "30m")
    d.lanectl("replay", *window, "--dry-run", "--rate", "5")
    replayed = d.lanectl("replay", *window, "--generation", "1", "--rate", "5")
    fixed = poll(lambda: _fixed(d, waba), 30, interval=0.5)
    after = _stored(d, waba)
    d.expect(
        "replay",
        "the replay re-runs each stored message's task once: texts restored, generation 1",
        replayed.returncode == 0 and fixed,
        f"{sum(i.get(schema.GENERATION) == 1 for i in after)} of {len(WAMIDS)} at generation 1",
    )
    settled_before = _settled(d)
    again = d.lanectl("replay", *window, "--generation", "1", "--rate", "5")
    # Its six deliveries (three messages, three statuses) are settled again, and find nothing to do:
    # the messages are duplicates, the statuses' writes skip (a stale status is work done).
    settled = poll(lambda: _settled(d) - settled_before >= 6, 30, interval=0.5)
    changed = sum(1 for old, new in zip(after, _stored(d, waba), strict=True) if old != new)
    d.expect(
        "replay",
        "the same replay run again changes nothing",
        again.returncode == 0 and settled and changed == 0,
        f"{changed} item(s) changed, {_settled(d) - settled_before} record(s) settled",
    )


def _settled(d: Demo) -> int:
    return d.s.outcome_count("messages", "duplicate") + d.s.outcome_count("messages", "done")


SCENES = (replay_after_fix,)
