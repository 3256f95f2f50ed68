"""`lanectl trace --tenant T --since …`: a tenant's deliveries and jobs in a window with their
outcomes, what the listing read, nothing personal, JSON as the other commands; bad input exit 2
and nothing changed."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from pipeline.settings.tenant_assets import AssetBinding, TenantAssets
from stacks.config.environments import ENVIRONMENTS
from tests.unit.tasks.payloads import CUSTOMER, WABA, text_message, whatsapp

from .conftest import snapshot

OTHER = "waba-200"


def test_a_tenants_deliveries_and_jobs_are_listed_with_their_outcomes_and_the_reads(pipeline, stack, lanectl):
    # Given two deliveries of the tenant (one processed, one still on its lane), one of another, and a job
    pipeline.deliver(whatsapp(messages=[text_message("wamid.T1", "my parcel")]))
    pipeline.drain()
    pipeline.deliver(whatsapp(messages=[text_message("wamid.T2", "hello again")]))
    pipeline.deliver(whatsapp(messages=[text_message("wamid.T3")], waba=OTHER))
    pipeline.submit({"lane": "bulk", "kind": "import.page", "tenant": WABA, "payload": {"page": 1}})
    before = snapshot(pipeline, stack)

    # When on-call lists the tenant's last hour
    code, out, err = lanectl("trace", "--env", "dev", "--tenant", WABA, "--since", "1h")

    # Then both deliveries and the job are there, with their outcomes and what the scan read
    assert code == 0, err
    assert out.startswith(f"tenant {WABA}: 3 delivery(ies) and job(s), ")
    assert out.count("whatsapp.messages") == 2
    assert "import.page" in out
    assert "outcomes: accepted 2, queued 1" in out
    assert "reads: webhook-log: " in out
    assert "row(s) scanned" in out
    assert OTHER not in out
    # and nothing personal, and nothing written
    assert CUSTOMER not in out
    assert "parcel" not in out
    assert snapshot(pipeline, stack) == before


def test_json_is_one_document_and_filters_narrow_it(pipeline, stack, lanectl):
    pipeline.deliver(whatsapp(messages=[text_message("wamid.T4")]))
    pipeline.submit({"lane": "bulk", "kind": "import.page", "tenant": WABA, "payload": {"page": 2}})

    code, out, _ = lanectl(
        "trace", "--env", "dev", "--tenant", WABA, "--since", "1h", "--source", "job", "--output", "json"
    )

    assert code == 0
    listed = json.loads(out)
    assert listed["matched"] == 1
    [row] = listed["rows"]
    assert (row["source"], row["lane"], row["kind"], row["outcome"]) == ("job", "bulk", "import.page", "queued")
    assert listed["selection"]["sources"] == ["job"]
    assert set(listed["reads"]) == {"job"}
    assert listed["reads"]["job"]["rows_scanned"] >= 1


def test_a_window_before_the_deliveries_lists_nothing(pipeline, stack, lanectl):
    pipeline.deliver(whatsapp(messages=[text_message("wamid.T5")]))

    code, out, _ = lanectl("trace", "--env", "dev", "--tenant", WABA, "--since", "3h", "--until", "2h")

    assert code == 0
    assert out.startswith(f"tenant {WABA}: 0 delivery(ies) and job(s)")


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (("--tenant", WABA, "--since", "2099-01-01T00:00:00Z"), "is in the future"),
        (("--tenant", WABA, "--since", "1h", "--until", "2099-01-01"), "is in the future"),
        (("--tenant", WABA, "--since", "1h", "--until", "2h"), "is after --until"),
        (("--tenant", "no/such tenant", "--since", "1h"), "is not a tenant id"),
        (("--tenant", WABA), "give --since"),
        (("--tenant", WABA, "--since", "1h", "--lane", "nope"), "unknown lane 'nope'"),
        (("--since", "1h"), "give an id to trace, or --tenant T"),
        (("wh-" + "0" * 64, "--tenant", WABA, "--since", "1h"), "give an id or --tenant, not both"),
        (("wh-" + "0" * 64, "--since", "1h"), "go with --tenant, not with an id"),
    ],
)
def test_bad_input_exits_2_with_the_reason_and_changes_nothing(pipeline, stack, lanectl, argv, says):
    pipeline.deliver(whatsapp(messages=[text_message("wamid.T6")]))
    before = snapshot(pipeline, stack)

    code, out, err = lanectl("trace", "--env", "dev", *argv)

    assert code == 2
    assert says in err
    assert out == ""
    assert snapshot(pipeline, stack) == before


def test_a_tenants_listing_takes_the_deliveries_of_the_meta_assets_bound_to_it(pipeline, stack, lanectl, monkeypatch):
    # Given dev binding tenant shop to one WhatsApp Business Account, whose delivery is filed under
    # that account's id, another account's delivery, and a job of shop's
    assets = AssetBinding({"shop": TenantAssets(waba=("5550001",)), "globex": TenantAssets(waba=("5550002",))})
    monkeypatch.setitem(ENVIRONMENTS, "dev", replace(ENVIRONMENTS["dev"], tenant_assets=assets))
    pipeline.deliver(whatsapp(messages=[text_message("wamid.B1")], waba="5550001"))
    pipeline.deliver(whatsapp(messages=[text_message("wamid.B2")], waba="5550002"))
    pipeline.submit({"lane": "bulk", "kind": "import.page", "tenant": "shop", "payload": {"page": 3}})

    # When on-call lists shop's last hour
    code, out, err = lanectl("trace", "--env", "dev", "--tenant", "shop", "--since", "1h")

    # Then its account's delivery and its job are listed, and the other account's is not
    assert code == 0, err
    assert out.startswith("tenant shop: 2 delivery(ies) and job(s), ")
    assert "its Meta assets 5550001" in out
    assert "5550001" in out
    assert "5550002" not in out
