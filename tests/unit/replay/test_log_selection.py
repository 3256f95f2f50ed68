"""Selecting rows of the raw log: times as an operator writes them, the checks made before any
read, and the Scan's filters, projection and read count against moto."""

from __future__ import annotations

import pytest

from ops.context import Context
from ops.errors import OpsError
from ops.log_selection import JOB, WEBHOOK, iso, parse_when, select, selection
from tests.support.aws import REGION
from tests.unit.tasks.payloads import WABA, text_message, whatsapp

NOW = 1_800_000_000.0


@pytest.mark.parametrize(
    ("text", "epoch"),
    [
        ("now", NOW),
        ("90s", NOW - 90),
        ("15m", NOW - 900),
        ("2h", NOW - 7200),
        ("7d", NOW - 7 * 86400),
        ("1799999000", 1_799_999_000.0),
        ("2027-01-15T08:00:00Z", NOW),
        ("2027-01-15T08:00:00", 1_800_000_000.0),
        ("2027-01-15T09:00:00+01:00", 1_800_000_000.0),
    ],
)
def test_a_time_is_iso_epoch_or_ago(text, epoch):
    assert parse_when(text, NOW, "--since") == epoch


def test_iso_is_utc_to_the_second():
    assert iso(NOW) == "2027-01-15T08:00:00Z"


def test_a_selection_is_checked_before_anything_is_read():
    with pytest.raises(OpsError, match="unknown status gone") as refused:
        selection(now=NOW, since="1h", until=None, statuses=["gone"])
    assert refused.value.code == 2
    chosen = selection(now=NOW, since="1h", until=None, lane="messages", lanes=("messages",), statuses=["done", "done"])
    assert (chosen.since, chosen.until, chosen.statuses) == (NOW - 3600, NOW, ("done",))
    assert chosen.narrowed
    assert not selection(now=NOW, since="1h", until=None).narrowed


@pytest.mark.parametrize("segments", [1, 3])
def test_the_scan_keeps_the_window_tenant_and_status_and_leaves_bodies_out(pipeline, stack, segments):
    from ops.aws import Aws, target
    from ops.output import Console
    from stacks.config.environments import ENVIRONMENTS

    # Given deliveries of two tenants, one of them processed, and a job
    pipeline.deliver(whatsapp(messages=[text_message("wamid.S1", "a text")]))
    pipeline.drain()
    pipeline.deliver(whatsapp(messages=[text_message("wamid.S2")], waba="waba-200"))
    pipeline.submit({"lane": "bulk", "kind": "import.page", "tenant": WABA, "payload": {"page": 1}})
    env = ENVIRONMENTS["dev"]
    where = target(env, endpoint_url=None, region=REGION, profile=None, environ={})
    ctx = Context(env=env, target=where, aws=Aws(where), console=Console())

    # When the tenant's queued rows of the last hour are selected
    chosen = selection(now=pipeline.clock.now, since="1h", until="now", tenant=WABA, statuses=["queued"])
    selected = select(ctx, chosen, segments=segments)

    # Then the delivery and the job are found, nothing else, without the body or the payload
    assert sorted(row.source for row in selected.rows) == [JOB, WEBHOOK]
    assert {row.tenant for row in selected.rows} == {WABA}
    assert all("body" not in row.item and "payload" not in row.item for row in selected.rows)
    # and each table's scan is counted: at least a page a segment, every row of it scanned
    assert selected.reads[WEBHOOK].pages >= segments
    assert selected.reads[WEBHOOK].scanned == 2
    assert selected.reads[JOB].scanned == 1
    # and a replay's selection carries the job's payload
    [job] = [row for row in select(ctx, chosen, segments=segments, with_payload=True).rows if row.source == JOB]
    assert job.item["payload"] == {"page": 1}
