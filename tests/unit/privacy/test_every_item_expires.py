"""Nothing the handlers write is kept forever: after traffic through the door, the jobs API and
every lane's task, every item of every table carries an `expires_at` within its retention."""

from __future__ import annotations

import secrets

from pipeline import schema
from pipeline.domain import senders
from stacks.config.environments import ENVIRONMENTS
from tests.unit.consumer.lane_env import internal
from tests.unit.tasks.payloads import comment_change, feed, status, text_message, whatsapp

from .conftest import TABLES

LOCAL = ENVIRONMENTS["local"]
DEADLINE_AHEAD = 3600


def _traffic(pipeline) -> None:
    # Meta: a text and a status (messages lane), a comment (engagement), and a body too large for
    # one item that is not JSON (logged in parts, never processed)
    assert pipeline.deliver(whatsapp(messages=[text_message("wamid.1", "see you at 5")]))["statusCode"] == 200
    assert pipeline.deliver(whatsapp(statuses=[status("wamid.1", "read")]))["statusCode"] == 200
    assert pipeline.deliver(feed(comment_change("c-1", "how much is it?")))["statusCode"] == 200
    huge = b"not json: " + secrets.token_urlsafe(600_000).encode()
    assert pipeline.deliver(huge)["statusCode"] == 200
    # Producers: a reply turn (with a deadline), an import page, a comment to triage
    deadline = pipeline.clock.now + DEADLINE_AHEAD
    jobs = [
        {
            "lane": "ai",
            "kind": "ai.inbound",
            "tenant": "shop-1",
            "deadline": deadline,
            "payload": {"conversation": "15550002", "message_id": "m-1", "text": "open on Sunday?"},
        },
        {
            "lane": "bulk",
            "kind": "import.page",
            "tenant": "shop-1",
            "payload": {"import_id": "i-1", "page": 0, "rows": [{"id": "r-1", "name": "Ana"}], "total_pages": 1},
        },
        {
            "lane": "engagement",
            "kind": "comment.triage",
            "tenant": "page-2",
            "payload": {"comment_id": "c-2", "message": "refund please", "post_id": "p-1", "from": {"id": "u-3"}},
        },
    ]
    for job in jobs:
        assert pipeline.submit(job)["statusCode"] == 202
    # An erasure, from Meta's callback: its job, the tombstone it leaves, its second pass
    assert pipeline.forget("user-9")["statusCode"] == 200  # the comment's author
    # A schedule's tick
    pipeline.lanes["scheduled"].send(internal("scheduled", "tick-1", "scoring.tick", {}, created_at=pipeline.clock.now))
    pipeline.drain()


def test_every_item_of_every_table_carries_an_expiry_within_its_retention(pipeline):
    # Given traffic through every writer: the door, the jobs API and each lane's task
    now = pipeline.clock.now
    _traffic(pipeline)
    assert pipeline.dead_letters() == {name: [] for name in pipeline.lanes}

    # When every table is read in full
    found = {table: pipeline.items(table) for table in (*TABLES, "accounts")}

    # Then every item has a numeric expiry, in the future and no later than its kind is kept
    kept = LOCAL.retention.seconds()
    erasure_due = LOCAL.erasure.deadline_days * 86400
    longest = {
        "webhook-log": kept["raw_deliveries_seconds"],
        "jobs": max(kept["jobs_seconds"] + DEADLINE_AHEAD, kept["erasure_requests_seconds"] + erasure_due),
        "data": kept["effects_seconds"],
        # markers, leases and counts; each tenant's queued-job count goes with its latest job
        "state": max(*kept.values(), LOCAL.idempotency_ttl_seconds) + max(DEADLINE_AHEAD, erasure_due),
        # a source account's last delivery, forgotten when it has been silent that long
        "accounts": LOCAL.accounts.silence.forget_seconds,
    }
    for table, items in found.items():
        for item in items:
            assert schema.TTL in item, (table, sorted(item))
            expires_at = float(item[schema.TTL]["N"])
            assert now < expires_at <= now + longest[table] + 1, (table, item.get("id") or item.get("pk"))

    # And the traffic reached every kind of item, so the check above had something to look at
    keys = {table: {_kind(item) for item in items} for table, items in found.items()}
    assert keys["webhook-log"] == {"wh"}  # rows and a body part
    assert any("#part" in i["id"]["S"] for i in found["webhook-log"])
    assert any(i["status"]["S"] == "erased" for i in found["webhook-log"] if "status" in i)
    assert any(i["kind"]["S"] == "privacy.erase" for i in found["jobs"])
    assert keys["jobs"] == {"job"}
    assert {"msg", "comment", "conversation", "import", "heartbeat", "tick"} <= keys["data"]
    assert {"done", "turn", "queued", "drain"} <= keys["state"]
    assert keys["accounts"] == {"accounts"}  # the one partition of every source account's stamp


def _kind(item: dict) -> str:
    """What an item is, from its key: the partition key's prefix, or for an item in a person's
    partition of the data table, its sort key's."""
    key = (item.get("id") or item.get("pk"))["S"]
    if key.startswith(senders.PERSON_PREFIX):
        key = item["sk"]["S"]
    return key.split("#")[0].split("-")[0]
